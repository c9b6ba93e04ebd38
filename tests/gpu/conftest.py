"""Load ckptlint's pytest plugin (for the ``gpu`` marker and fixtures) in a source checkout.

See tests/runtime/conftest.py for why this is not ``pytest_plugins``.
"""

import ckptlint.pytest_plugin as ckpt_plugin


def pytest_configure(config):
    pm = config.pluginmanager
    if not pm.is_registered(ckpt_plugin):
        pm.register(ckpt_plugin, "ckptlint.pytest_plugin")
