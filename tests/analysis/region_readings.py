"""The readings of regions on ``ast`` (``AstRegionBuilder``) that the golden answers of
``test_ast_regions.py`` record (they were compared with libcst's ``RegionBuilder`` while it
lived): for every site, the region and the deep region (status, entries, frames in order with
how each is reached, the calls, attributes and names each frame walks, layers, layer calls,
unknown, cut and opaque calls), the signature of the site's callable, the decisions of the
``if`` tests in the frames and the builder's other queries; positions 1-based ``(row, col)``,
values described as ``evaluation_readings`` describes them."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable

from evaluation_readings import _AstSide, _norm

from ckptlint.checkpoint.evaluator.ast_regions import AstRegionBuilder
from ckptlint.checkpoint.evaluator.denotations import InstanceValue
from ckptlint.checkpoint.sites.ast_site_index import ast_site_index
from ckptlint.semantic.ast_analysis import parse_ast
from ckptlint.semantic.project import AstProject
from ckptlint.text.source import SourceFile

__all__ = ["region_answers"]

_WALKED = {ast.Call: "call", ast.Attribute: "attribute", ast.Name: "name"}
_IFS = (ast.If, ast.IfExp)


class _AstReader(_AstSide):
    """An evaluator side whose positions of nodes made up outside a module are a word, and
    which shows a file by ``shown``."""

    shown: Callable[[object], str] = str

    def position(self, analysis: object, node: object) -> tuple:
        try:
            return super().position(analysis, node)
        except AttributeError:
            return ("not in the module",)


def _def_name(node: object) -> str:
    return getattr(node, "name", None) or "<lambda>"


def _region_reading(region: object, side: _AstReader) -> dict[str, object]:
    """A region read field by field (see the module docstring); ``walked`` per frame."""
    frames = region.frames  # type: ignore[attr-defined]
    index = {id(frame): i for i, frame in enumerate(frames)}

    def where(node: object, frame: object) -> object:
        if node is None:
            return None
        return side.position(frame.analysis if frame is not None else region.analysis, node)[0]  # type: ignore[attr-defined]

    def frame_index(frame: object) -> int | None:
        return None if frame is None else index.get(id(frame), -1)

    reading: dict[str, object] = {
        "status": (region.resolved, region.partial, region.seen_whole(), region.ran_out),  # type: ignore[attr-defined]
        "entries": [side.describe(v) for v in region.entries],  # type: ignore[attr-defined]
        "layers": [side.describe(v) for v in region.layers],  # type: ignore[attr-defined]
    }
    layer_index = {id(layer): i for i, layer in enumerate(region.layers)}  # type: ignore[attr-defined]
    reading["layer calls"] = [
        (layer_index.get(id(c.layer)), where(c.invocation, c.frame), frame_index(c.frame))
        for c in region.layer_calls  # type: ignore[attr-defined]
    ]
    for name in ("unknown_calls", "cut_calls"):
        reading[name] = [(where(call, frame), frame_index(frame)) for call, frame in getattr(region, name)]
    reading["opaque_calls"] = [(where(call, frame), frame_index(frame), side.shown(path)) for call, frame, path in region.opaque_calls]  # type: ignore[attr-defined]
    reading["frames"] = [
        (
            side.def_key(frame.analysis, frame.function),
            frame.depth,
            frame.via,
            frame_index(frame.caller),
            where(frame.invocation, frame.caller),
            [(frame_index(f), where(call, f)) for f, call in frame.reached_from],
        )
        for frame in frames
    ]
    reading["walked"] = [
        [(_WALKED[type(n)], side.position(frame.analysis, n)[0]) for n in frame.nodes() if type(n) in _WALKED] for frame in frames
    ]
    return reading


def _decisions(region: object, builder: object, side: _AstReader) -> list[tuple]:
    """``decide``, ``literal`` and ``runs`` of every ``if`` test walked in the region's frames;
    for a method's frame, ``assigned_outside`` its class's ``__init__`` of each attribute read
    on ``self``."""
    out: list[tuple] = []
    for i, frame in enumerate(region.frames):  # type: ignore[attr-defined]
        ctx = frame.ctx
        self_name = frame.self_parameter()
        info = ctx.self_class
        init = builder.method(info, "__init__") if info is not None else None  # type: ignore[attr-defined]
        attrs: dict[str, None] = {}
        for node in frame.nodes():
            if isinstance(node, _IFS):
                test = node.test  # type: ignore[attr-defined]
                position = side.position(frame.analysis, test)[0]
                literal = _norm(builder.literal(test, ctx))  # type: ignore[attr-defined]
                out.append((i, position, builder.decide(test, ctx), literal, builder.runs(node, ctx)))  # type: ignore[attr-defined]
            elif self_name is not None and isinstance(node, ast.Attribute):
                if getattr(node.value, "id", None) == self_name:
                    attrs.setdefault(node.attr)
        for attr in attrs:
            out.append((i, attr, builder.assigned_outside(frame.analysis, attr, init[0] if init else None)))  # type: ignore[attr-defined]
    return out


def _signature(found: object) -> object:
    if found is None:
        return None
    return (sorted(found.keywords), found.var_keyword, _def_name(found.node))  # type: ignore[attr-defined]


def _site_readings(sites: list, analysis: object, builder: object, side: _AstReader) -> list[dict[str, object]]:
    """Every reading of every site, asked in the sites' order."""
    out = []
    for site in sites:
        region = builder.region(site, analysis)  # type: ignore[attr-defined]
        deep = builder.deep_region(site, analysis)  # type: ignore[attr-defined]
        reading = {
            "region": _region_reading(region, side),
            "deep": _region_reading(deep, side),
            "signature": _signature(builder.signature(site.function, analysis)),  # type: ignore[attr-defined]
            "decisions": _decisions(region, builder, side),
            "queries": _queries(site, region, analysis, builder, side),
        }
        out.append(reading)
    return out


def _queries(site: object, region: object, analysis: object, builder: object, side: _AstReader) -> list:
    """The builder's other answers about the site: the values of its callable (plain,
    classes only with a small budget), the receivers of its ``forward``, and for each instance
    it may be, what the instance holds and its ``forward``'s signature."""
    out: list = []
    function = site.function  # type: ignore[attr-defined]
    if function is not None:
        out.append([side.describe(v) for v in builder.values(function, analysis)])  # type: ignore[attr-defined]
        out.append([side.describe(v) for v in builder.values(function, analysis, 200, classes_only=True)])  # type: ignore[attr-defined]
        out.append([side.describe(v) for v in builder.receivers(function, "forward", analysis)])  # type: ignore[attr-defined]
    for entry in region.entries:  # type: ignore[attr-defined]
        if isinstance(entry, InstanceValue):
            out.append([side.describe(v) for v in builder.held(entry)])  # type: ignore[attr-defined]
            out.append(_signature(builder.method_signature(entry, "forward")))  # type: ignore[attr-defined]
            out.append([one.qualname for one in builder.mro(entry.info)])  # type: ignore[attr-defined]
    return out


def region_answers(
    text: str,
    module_name: str = "pkg.mod",
    is_package: bool = False,
    path: str = "<compared>",
    loader: AstProject | None = None,
    shown: Callable[[object], str] = str,
) -> list[dict[str, object]]:
    """Every reading of every site of ``text``, in the sites' order (see the module); with
    ``loader`` regions follow imported names into other modules; ``shown`` writes the file
    of an opaque call."""
    source = SourceFile(path, text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis = parse_ast(source, module_name, is_package)
    assert analysis is not None
    analysis.project = loader
    side = _AstReader(None)
    side.shown = shown  # type: ignore[method-assign]
    found = _site_readings(ast_site_index(analysis).sites, analysis, AstRegionBuilder(loader), side)
    analysis.release()
    return found
