"""Load ckptlint's pytest plugin (and pytester) for these tests.

When ckptlint is installed, its ``pytest11`` entry point has registered the plugin already.
In a source checkout it is not, and ``pytest_plugins`` is only allowed in the rootdir
conftest, so the plugin is registered here; its hooks are historic or run after collection,
and its fixtures are global, so late registration works. To pass ``--ckpt-device`` from a
source checkout, load the plugin early: ``python -m pytest -p ckptlint.pytest_plugin ...``.
"""

import ckptlint.pytest_plugin as ckpt_plugin


def pytest_configure(config):
    pm = config.pluginmanager
    if not pm.is_registered(ckpt_plugin):
        pm.register(ckpt_plugin, "ckptlint.pytest_plugin")
    if not pm.has_plugin("pytester"):
        pm.import_plugin("pytester")
