"""What torch's own layers and functions do, as data (the region rules' knowledge base).

ckptlint never imports torch; these tables say which torch callables draw random numbers,
which layers keep running statistics, which are containers, and which calls move a tensor to
another device. Names are qualified names as the semantic model resolves them
(``torch.nn.Dropout`` whether written ``nn.Dropout``, ``torch.nn.Dropout`` or imported from
``torch.nn.modules.dropout``). Sources: torch/nn/modules/*.py and torch/nn/functional.py,
PyTorch 2.9 (unchanged in 2.13); ops tagged ``nondeterministic_seeded`` in
native_functions.yaml.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = [
    "CONTAINER_CLASSES",
    "TORCH_VERSION_CHECKS",
    "CHECKPOINT_PARAMETERS",
    "TORCH_VERSIONS_JUDGED",
    "torch_version_check",
    "batchnorm_instances",
    "DEVICE_MOVE_METHODS",
    "GENERATOR_CLASSES",
    "LAYERS",
    "LayerFact",
    "LayerKind",
    "NORM_FACTORIES",
    "norm_factory",
    "NormFactory",
    "PYTHON_RANDOM_PREFIXES",
    "PYTHON_RANDOM_STATE_SETTERS",
    "RANDOM_FUNCTIONS",
    "RANDOM_METHODS",
    "RandomFunction",
    "layer_fact",
    "random_function",
]


class LayerKind(str, Enum):
    RANDOM = "random"  # draws random numbers in training mode (dropout)
    RUNNING_STATS = "running-stats"  # updates buffers in training mode (BatchNorm)
    CONTAINER = "container"
    PLAIN = "plain"  # neither: the same output and no state written, in training as in eval


@dataclass(frozen=True)
class LayerFact:
    """One torch layer class.

    Attributes:
        name: display name (``nn.Dropout``).
        kind: see :class:`LayerKind`.
        switch: the constructor argument that turns the behaviour off, as
            ``(keyword, position, default)``; e.g. dropout's ``p`` (position 0, default 0.5):
            ``p=0`` means no randomness. ``None``: always on.
        off_when: the value of ``switch`` that turns it off (``0`` for probabilities,
            ``False`` for ``track_running_stats``).
    """

    name: str
    kind: LayerKind
    switch: tuple[str, int, object] | None = None
    off_when: object = 0


def _dropout(name: str, position: int = 0, keyword: str = "p", default: object = 0.5) -> LayerFact:
    return LayerFact(name, LayerKind.RANDOM, (keyword, position, default), 0)


_DROPOUTS = {
    "Dropout": _dropout("nn.Dropout"),
    "Dropout1d": _dropout("nn.Dropout1d"),
    "Dropout2d": _dropout("nn.Dropout2d"),
    "Dropout3d": _dropout("nn.Dropout3d"),
    "AlphaDropout": _dropout("nn.AlphaDropout"),
    "FeatureAlphaDropout": _dropout("nn.FeatureAlphaDropout"),
    "RReLU": LayerFact("nn.RReLU", LayerKind.RANDOM),
    # recurrent and attention layers take a `dropout` probability (default 0.0)
    "RNN": _dropout("nn.RNN", 99, "dropout", 0.0),
    "LSTM": _dropout("nn.LSTM", 99, "dropout", 0.0),
    "GRU": _dropout("nn.GRU", 99, "dropout", 0.0),
    "MultiheadAttention": _dropout("nn.MultiheadAttention", 2, "dropout", 0.0),
    "TransformerEncoderLayer": _dropout("nn.TransformerEncoderLayer", 3, "dropout", 0.1),
    "TransformerDecoderLayer": _dropout("nn.TransformerDecoderLayer", 3, "dropout", 0.1),
    "Transformer": _dropout("nn.Transformer", 5, "dropout", 0.1),
}

_NORMS = {
    "BatchNorm1d": LayerFact("nn.BatchNorm1d", LayerKind.RUNNING_STATS, ("track_running_stats", 4, True), False),
    "BatchNorm2d": LayerFact("nn.BatchNorm2d", LayerKind.RUNNING_STATS, ("track_running_stats", 4, True), False),
    "BatchNorm3d": LayerFact("nn.BatchNorm3d", LayerKind.RUNNING_STATS, ("track_running_stats", 4, True), False),
    "LazyBatchNorm1d": LayerFact("nn.LazyBatchNorm1d", LayerKind.RUNNING_STATS, ("track_running_stats", 3, True), False),
    "LazyBatchNorm2d": LayerFact("nn.LazyBatchNorm2d", LayerKind.RUNNING_STATS, ("track_running_stats", 3, True), False),
    "LazyBatchNorm3d": LayerFact("nn.LazyBatchNorm3d", LayerKind.RUNNING_STATS, ("track_running_stats", 3, True), False),
    "SyncBatchNorm": LayerFact("nn.SyncBatchNorm", LayerKind.RUNNING_STATS, ("track_running_stats", 4, True), False),
    # InstanceNorm keeps running statistics only with track_running_stats=True (default False)
    "InstanceNorm1d": LayerFact("nn.InstanceNorm1d", LayerKind.RUNNING_STATS, ("track_running_stats", 4, False), False),
    "InstanceNorm2d": LayerFact("nn.InstanceNorm2d", LayerKind.RUNNING_STATS, ("track_running_stats", 4, False), False),
    "InstanceNorm3d": LayerFact("nn.InstanceNorm3d", LayerKind.RUNNING_STATS, ("track_running_stats", 4, False), False),
}

#: Leaf layers whose ``forward`` draws no random numbers and writes no state in either mode, and
#: that hold no module they were given (torch 2.13, ``torch/nn/modules/linear.py``, ``conv.py``,
#: ``normalization.py``, ``activation.py``, ``pooling.py``, ``flatten.py``, ``upsampling.py``,
#: ``pixelshuffle.py``, ``padding.py``): a region that calls only these is known to recompute the
#: same values. Left out on purpose: ``RReLU`` (random slopes in training), ``MultiheadAttention``
#: (attention dropout), ``FractionalMaxPool*`` (random regions), ``Embedding``/``EmbeddingBag``
#: (``max_norm`` renormalizes the weight in place), the RNN and transformer layers (dropout).
_PLAIN_NAMES = (
    "Identity Linear Bilinear LazyLinear "
    "Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d "
    "LazyConv1d LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d "
    "LayerNorm GroupNorm RMSNorm LocalResponseNorm "
    "Threshold ReLU Hardtanh ReLU6 Sigmoid Hardsigmoid Tanh SiLU Mish Hardswish ELU CELU SELU GLU GELU "
    "Hardshrink LeakyReLU LogSigmoid Softplus Softshrink PReLU Softsign Tanhshrink Softmin Softmax "
    "Softmax2d LogSoftmax "
    "MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d "
    "AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d LPPool1d LPPool2d "
    "Flatten Unflatten Upsample UpsamplingNearest2d UpsamplingBilinear2d PixelShuffle PixelUnshuffle "
    "ZeroPad1d ZeroPad2d ZeroPad3d ConstantPad1d ConstantPad2d ConstantPad3d ReflectionPad1d "
    "ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d CircularPad1d "
    "CircularPad2d CircularPad3d"
).split()
_PLAIN = {name: LayerFact(f"nn.{name}", LayerKind.PLAIN) for name in _PLAIN_NAMES}

_CONTAINERS = {
    "Sequential": LayerFact("nn.Sequential", LayerKind.CONTAINER),
    "ModuleList": LayerFact("nn.ModuleList", LayerKind.CONTAINER),
    "ModuleDict": LayerFact("nn.ModuleDict", LayerKind.CONTAINER),
}

_MODULE_PATHS = ("torch.nn.", "torch.nn.modules.", "torch.nn.modules.dropout.", "torch.nn.modules.batchnorm.",
                 "torch.nn.modules.instancenorm.", "torch.nn.modules.container.", "torch.nn.modules.rnn.",
                 "torch.nn.modules.activation.", "torch.nn.modules.transformer.", "torch.nn.modules.linear.",
                 "torch.nn.modules.conv.", "torch.nn.modules.normalization.", "torch.nn.modules.pooling.",
                 "torch.nn.modules.flatten.", "torch.nn.modules.upsampling.", "torch.nn.modules.pixelshuffle.",
                 "torch.nn.modules.padding.")

LAYERS: dict[str, LayerFact] = {
    f"{prefix}{name}": fact
    for prefix in _MODULE_PATHS
    for name, fact in {**_DROPOUTS, **_NORMS, **_CONTAINERS, **_PLAIN}.items()
}

#: e2cnn and escnn (their ``nn/modules/batchnormalization/inner.py``, e2cnn 0.2, escnn 1.0):
#: ``InnerBatchNorm(in_type, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)``
#: builds one ``torch.nn.BatchNorm3d(..., track_running_stats=track_running_stats)`` per field
#: size (``self.add_module('batch_norm_[{s}]', _batchnorm)``) and runs each in ``forward``.
#: ``SequentialModule(*modules)`` (``nn/modules/sequential_module.py``) adds its arguments with
#: ``add_module`` and runs them in order, as ``nn.Sequential`` does.
_EQUIVARIANT_PATHS = (".nn.", ".nn.modules.", ".nn.modules.batchnormalization.", ".nn.modules.batchnormalization.inner.",
                      ".nn.modules.sequential_module.")
_EQUIVARIANT = {
    "InnerBatchNorm": LayerFact("enn.InnerBatchNorm", LayerKind.RUNNING_STATS, ("track_running_stats", 4, True), False),
    "SequentialModule": LayerFact("enn.SequentialModule", LayerKind.CONTAINER),
}
LAYERS.update(
    {f"{library}{path}{name}": fact for library in ("e2cnn", "escnn") for path in _EQUIVARIANT_PATHS for name, fact in _EQUIVARIANT.items()}
)

#: Layers that hold torch layers of the running-statistics family (``LayerFact.name`` -> the
#: held layer's): ``isinstance(m, _BatchNorm)`` over ``self.modules()`` finds what they hold.
_HOLDS = {"enn.InnerBatchNorm": "nn.BatchNorm3d"}

CONTAINER_CLASSES = frozenset(q for q, fact in LAYERS.items() if fact.kind is LayerKind.CONTAINER) | {
    "builtins.list",
    "builtins.tuple",
}


#: Layers (their ``LayerFact.name``) whose instances pass ``isinstance(m, _BatchNorm)``:
#: ``_BatchNorm`` is the base of BatchNorm1d/2d/3d, of their lazy forms and of SyncBatchNorm
#: (torch/nn/modules/batchnorm.py), not of InstanceNorm (``_InstanceNorm`` derives from
#: ``_NormBase``, the base of both).
_BATCHNORM_FAMILY = frozenset(fact.name for name, fact in _NORMS.items() if "BatchNorm" in name)
_NORM_BASE_FAMILY = frozenset(fact.name for fact in _NORMS.values())

#: ``_BatchNorm`` under the names code imports it by: torch's module, and mmcv's / mmengine's
#: re-exports (``parrots_wrapper._BatchNorm`` is torch's class when PyTorch is the backend;
#: copies of mmcv vendored under another package end in the same names).
_BATCHNORM_BASES = ("torch.nn.modules.batchnorm._BatchNorm", "mmcv.utils.parrots_wrapper._BatchNorm",
                    "mmcv.utils._BatchNorm", "mmengine.utils.dl_utils.parrots_wrapper._BatchNorm",
                    "mmengine.utils.dl_utils._BatchNorm", "mmengine.utils._BatchNorm")


def batchnorm_instances(qualified: str) -> frozenset[str]:
    """The running-statistics layers (``LayerFact.name``: ``"nn.BatchNorm2d"``) whose instances
    pass ``isinstance(m, C)`` for the class ``C`` named ``qualified``: the layer itself
    (``torch.nn.BatchNorm2d``: BatchNorm2d only, not SyncBatchNorm nor an unmaterialised
    LazyBatchNorm2d), every BatchNorm for ``_BatchNorm``, every norm with running statistics for
    ``_NormBase``; empty for anything else."""
    if qualified == "torch.nn.modules.batchnorm._NormBase":
        found = _NORM_BASE_FAMILY
    elif qualified in _BATCHNORM_BASES or any(qualified.endswith("." + base) for base in _BATCHNORM_BASES[1:]):
        found = _BATCHNORM_FAMILY
    else:
        fact = LAYERS.get(qualified)
        if fact is None or fact.kind is not LayerKind.RUNNING_STATS or fact.name in _HOLDS:
            return frozenset()
        found = frozenset({fact.name})
    # a layer that holds one of them is frozen with it (`m.eval()` reaches what it holds)
    return found | {holder for holder, held in _HOLDS.items() if held in found}


def layer_fact(qualified_names: frozenset[str] | set[str]) -> tuple[str, LayerFact] | None:
    """The layer one of ``qualified_names`` denotes, as ``(qualified name, fact)``."""
    for name in sorted(qualified_names):
        fact = LAYERS.get(name)
        if fact is not None:
            return name, fact
    return None


@dataclass(frozen=True)
class RandomFunction:
    """A torch function that draws random numbers.

    ``switch``: ``(keyword, position, default)`` of the argument that turns randomness off
    (dropout's ``p``, ``scaled_dot_product_attention``'s ``dropout_p``); ``training``: the
    position of a ``training`` argument that turns it off when ``False`` (``None``: none).
    """

    name: str
    switch: tuple[str, int, object] | None = None
    training: tuple[str, int, object] | None = None


def _functional(
    name: str, switch: tuple[str, int, object] | None = None, training: tuple[str, int, object] | None = None
) -> RandomFunction:
    return RandomFunction(name, switch, training)


_F = "torch.nn.functional."
RANDOM_FUNCTIONS: dict[str, RandomFunction] = {
    **{
        f"torch.{n}": RandomFunction(f"torch.{n}")
        for n in (
            "rand",
            "rand_like",
            "randn",
            "randn_like",
            "randint",
            "randint_like",
            "randperm",
            "bernoulli",
            "multinomial",
            "normal",
            "poisson",
            "rrelu",
        )
    },
    **{
        f"{_F}{n}": _functional(f"F.{n}", ("p", 1, 0.5), ("training", 2, True))
        for n in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
    },
    f"{_F}rrelu": _functional("F.rrelu", None, ("training", 3, False)),
    f"{_F}scaled_dot_product_attention": _functional(
        "F.scaled_dot_product_attention", ("dropout_p", 4, 0.0)
    ),
    f"{_F}gumbel_softmax": _functional("F.gumbel_softmax"),
    "torch.nn.init.normal_": RandomFunction("nn.init.normal_"),
    "torch.nn.init.uniform_": RandomFunction("nn.init.uniform_"),
    "torch.nn.init.trunc_normal_": RandomFunction("nn.init.trunc_normal_"),
}

#: Tensor methods that draw random numbers (in place or not).
RANDOM_METHODS = frozenset(
    {
        "bernoulli",
        "bernoulli_",
        "normal_",
        "uniform_",
        "exponential_",
        "random_",
        "geometric_",
        "cauchy_",
        "log_normal_",
        "multinomial",
    }
)

#: Qualified-name prefixes of random sources checkpoint never restores (CKP103).
PYTHON_RANDOM_PREFIXES = ("random.", "numpy.random.")

#: Calls under those prefixes that set or read the generator's state instead of drawing from it
#: (Python 3 ``random``; NumPy ``numpy.random`` legacy API): reseeding with the same value in the
#: recomputation reproduces the forward's stream (DeepSpeed's pipeline ``set_random_seed``).
PYTHON_RANDOM_STATE_SETTERS = frozenset(
    {"random.seed", "random.setstate", "random.getstate", "numpy.random.seed", "numpy.random.set_state", "numpy.random.get_state"}
)

#: Explicit generator objects: never forked or restored by checkpoint.
GENERATOR_CLASSES = frozenset({"torch.Generator", "torch._C.Generator"})

#: ``torch.nn.Module`` methods that return the module itself (torch 2.13,
#: ``torch/nn/modules/module.py``: ``to``, ``cuda``, ``half``... return ``self._apply(...)``,
#: which returns ``self``; ``train``, ``eval``, ``requires_grad_`` and ``apply`` return ``self``):
#: ``Projector(cfg).to(dtype)`` denotes the projector.
MODULE_METHODS_RETURNING_SELF = frozenset(
    {"to", "cuda", "cpu", "xpu", "ipu", "mtia", "half", "float", "double", "bfloat16", "type", "train", "eval",
     "requires_grad_", "apply", "to_empty", "share_memory"}
)

#: Tensor methods that move a tensor to a device named by their arguments.
DEVICE_MOVE_METHODS = frozenset({"to", "cuda", "xpu", "npu", "mps", "hpu", "ipu"})


def random_function(qualified_names: frozenset[str] | set[str]) -> RandomFunction | None:
    """The random torch function one of ``qualified_names`` denotes, or ``None``."""
    for name in sorted(qualified_names):
        fact = RANDOM_FUNCTIONS.get(name)
        if fact is not None:
            return fact
    return None


# ---------------------------------------------------------------------------- norm factories
@dataclass(frozen=True)
class NormFactory:
    """A library function that builds a normalisation layer from a config dict.

    Attributes:
        config: ``(keyword, position)`` of the config argument; its ``"type"`` key names the
            layer (a registry name, or the class itself).
        returns_pair: it returns ``(name, layer)`` rather than the layer.
        types: registry name -> torch qualified class name.
        module: it returns a module whose forward runs the layer (with others that have no
            training behaviour): mmcv's ``ConvModule`` (conv, norm, activation).
    """

    config: tuple[str, int]
    returns_pair: bool
    types: dict[str, str]
    module: bool = False


#: mmcv 2.x ``mmcv/cnn/bricks/norm.py``: ``MODELS.register_module('BN', module=nn.BatchNorm2d)``
#: and the other registrations; ``build_norm_layer(cfg, num_features, postfix='')`` looks up
#: ``cfg['type']`` (or takes it as the class) and returns ``(abbreviation + postfix, layer)``.
#: ``SyncBatchNorm`` comes from mmengine's parrots_wrapper, which is torch's outside parrots.
_MMCV_NORM_TYPES = {
    "BN": "torch.nn.BatchNorm2d",
    "BN1d": "torch.nn.BatchNorm1d",
    "BN2d": "torch.nn.BatchNorm2d",
    "BN3d": "torch.nn.BatchNorm3d",
    "SyncBN": "torch.nn.SyncBatchNorm",
    "GN": "torch.nn.GroupNorm",
    "LN": "torch.nn.LayerNorm",
    "IN": "torch.nn.InstanceNorm2d",
    "IN1d": "torch.nn.InstanceNorm1d",
    "IN2d": "torch.nn.InstanceNorm2d",
    "IN3d": "torch.nn.InstanceNorm3d",
}

NORM_FACTORIES: dict[str, NormFactory] = {
    name: NormFactory(("cfg", 0), True, _MMCV_NORM_TYPES)
    for name in ("mmcv.cnn.build_norm_layer", "mmcv.cnn.bricks.build_norm_layer", "mmcv.cnn.bricks.norm.build_norm_layer")
}

#: mmcv ``mmcv/cnn/bricks/conv_module.py`` (1.x and 2.x): ``ConvModule(in_channels,
#: out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias='auto',
#: conv_cfg=None, norm_cfg=None, act_cfg=dict(type='ReLU'), ...)`` builds its norm with
#: ``build_norm_layer(norm_cfg, channels)`` and runs it in ``forward`` (``order`` must hold
#: ``'norm'``); with ``norm_cfg=None`` it has none (nothing is known then).
NORM_FACTORIES.update(
    {
        name: NormFactory(("norm_cfg", 9), False, _MMCV_NORM_TYPES, module=True)
        for name in ("mmcv.cnn.ConvModule", "mmcv.cnn.bricks.ConvModule", "mmcv.cnn.bricks.conv_module.ConvModule")
    }
)


def norm_factory(qualified: str) -> NormFactory | None:
    """The norm factory named ``qualified`` (:data:`NORM_FACTORIES`), or one of a vendored copy
    of mmcv, whose names end with mmcv's (ControlNet's ``annotator.uniformer.mmcv.cnn
    .build_norm_layer``), as the ``_BatchNorm`` bases of vendored copies are read; ``None``
    otherwise."""
    found = NORM_FACTORIES.get(qualified)
    if found is None and ".mmcv." in qualified:
        found = next((factory for name, factory in NORM_FACTORIES.items() if qualified.endswith("." + name)), None)
    return found


# ---------------------------------------------------------------------------- version checks
#: The torch releases ckptlint judges code for (the behaviour every rule describes: 2.9 to 2.13).
TORCH_VERSIONS_JUDGED = ((2, 9), (2, 13))

#: Functions that compare the installed torch with a version: diffusers
#: ``utils/import_utils.py`` ``is_torch_version(operation, version)`` ("Compares the current
#: PyTorch version to a given reference with an operation", 0.36), which its models and their
#: copies use for ``ckpt_kwargs = {"use_reentrant": False} if is_torch_version(">=", "1.11.0")
#: else {}``.
TORCH_VERSION_CHECKS = frozenset({"diffusers.utils.is_torch_version", "diffusers.utils.import_utils.is_torch_version"})

#: The parameters of torch's checkpoint functions on every release of :data:`TORCH_VERSIONS_JUDGED`
#: (torch/utils/checkpoint.py 2.9 and 2.13, ``inspect.signature``), for code that tests
#: ``"use_reentrant" in inspect.signature(checkpoint).parameters`` before binding it (TinyCLIP's
#: ``open_clip/model.py``).
CHECKPOINT_PARAMETERS: dict[str, frozenset[str]] = {
    "torch.utils.checkpoint.checkpoint": frozenset(
        {"function", "args", "use_reentrant", "context_fn", "determinism_check", "debug", "early_stop", "kwargs"}
    ),
    "torch.utils.checkpoint.checkpoint_sequential": frozenset({"functions", "segments", "input", "use_reentrant", "kwargs"}),
}

_COMPARISONS = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b,
}


def torch_version_check(operation: object, version: object) -> bool | None:
    """What ``is_torch_version(operation, version)`` returns on every release of
    :data:`TORCH_VERSIONS_JUDGED` (``">="``, ``"1.11.0"``: True), or ``None`` when they differ or
    the arguments are not an operator and a dotted version of numbers."""
    compare = _COMPARISONS.get(operation) if isinstance(operation, str) else None
    if compare is None or not isinstance(version, str):
        return None
    try:
        wanted = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        return None
    answers = {compare(judged, wanted + (0,) * (2 - len(wanted))) for judged in TORCH_VERSIONS_JUDGED}
    return answers.pop() if len(answers) == 1 else None
