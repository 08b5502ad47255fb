"""Draw provenance graphs as interactive HTML pages (pyvis / vis.js), in Lipstick's notation.

What is drawn follows Figures 2 and 3 of the paper: p-nodes are round (``ellipse``), v-nodes
square (``box`` with square corners), module invocation nodes (type ``m``) diamonds, zoomed-out
modules (type ``z``) rounded boxes labelled with the module. Every node is labelled as in the
paper's figures (:mod:`lipspark.viz.labels`): tokens by name, operators by symbol, aggregates and
black boxes by function and value (``Count=2``; after a deletion ``Count 2→1``), invocations by
their token ``M_dealer1[1]``, input/state/output nodes by type, relation and tuple
(``[s] Cars(C2, Civic)``); a long label is cut, the whole of it in the hover title. Every module
has a colour of its own (nodes outside modules are grey). Edges point from the node used to the
node derived. The layout (:mod:`lipspark.viz.layout`) puts one execution per column, left to
right, its module invocations in the workflow DAG's order, each in a frame captioned with the
module and execution, the nodes of an invocation inside its frame; positions are computed, the
same for the same graph, and vis.js draws them with physics off. Nodes a deletion removed keep
their place, greyed, with a dashed red border. Hovering a node shows its attributes and its
provenance polynomial; a legend explains the notation.

Every data value (labels, tuple values, relation and module names, values, polynomials) put in
HTML is escaped with :func:`html.escape`: tooltips, the legend and the title. Node labels and
frame captions are drawn as plain text on the canvas (``fillText``, no vis.js markup mode), so
they are never parsed as HTML, and escaping them would show ``&lt;`` on screen. All node, edge
and frame data reach the page as JSON with ``<``, ``>``, ``&`` and ``'`` written as ``\\u003c``
etc., so no value can end the script it sits in. The page loads nothing from the network (vis.js
is inlined), so it works offline and in a sandboxed notebook iframe.

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> g = GraphIndex.build(
...     pd.DataFrame({"id": [1, 2, 3, 4], "kind": ["p", "p", "p", "v"], "op": ["token", "invocation", "state", "constant"],
...                   "label": ["Cars:C2", "dealer1", "·", "1"], "relation": [None, None, "Cars", None],
...                   "type": [None, "m", "s", None], "module": [None, "dealer1", "dealer1", "dealer1"],
...                   "execution": [None, 1, 1, 1], "invocation": [None, 2, 2, 2], "value": [None, None, None, 1]}),
...     pd.DataFrame({"src": [1, 2], "dst": [3, 3]}))
>>> net = render(g, title="Cars in dealer1")
>>> [(n["label"], n["shape"]) for n in net.nodes]  # column by column: the invocation, the base tuple and a constant, the state
[('M_dealer1[1]', 'diamond'), ('Cars:C2', 'ellipse'), ('1', 'box'), ('[s] Cars', 'ellipse')]
>>> x = {n["id"]: n["x"] for n in net.nodes}
>>> x["1"] < x["3"] and x["2"] < x["3"]  # every edge points right
True
>>> [(e["from"], e["to"]) for e in net.edges]
[('1', '3'), ('2', '3')]
>>> page = to_html(g)
>>> import re
>>> 'id="lipspark-legend"' in page, re.search(r'(src|href)="https?://', page)  # a legend, nothing fetched
(True, None)
"""
from __future__ import annotations

import html
import json
import os
import re
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lipspark.errors import LipsparkError
from lipspark.graph.expression import Tensor, expressions
from lipspark.graph.index import NODE_TYPES, GraphIndex
from lipspark.query.deletion import DeletionResult
from lipspark.query.edgedata import EdgeData, sample_text
from lipspark.query.engine import Result
from lipspark.viz.labels import edge_label, node_label, shorten
from lipspark.viz.layout import Layout, _drawn_edges, layout, levels
from lipspark.vocabulary import UNKNOWN, Op

if TYPE_CHECKING:  # pragma: no cover
    from pyvis.network import Network

__all__ = ["PALETTE", "POLYNOMIAL_LIMIT", "TOOLTIP_POLYNOMIAL_CHARS", "DrawingInfo", "levels", "layout", "module_colours", "render", "repr_html",
           "to_html"]

#: (background, border) colours given to modules in sorted name order (cycled past the end).
PALETTE: tuple[tuple[str, str], ...] = (
    ("#aec7e8", "#1f77b4"), ("#ffbb78", "#ff7f0e"), ("#98df8a", "#2ca02c"), ("#c5b0d5", "#9467bd"),
    ("#9edae5", "#17becf"), ("#f7b6d2", "#e377c2"), ("#dbdb8d", "#bcbd22"), ("#c49c94", "#8c564b"),
    ("#b2dfdb", "#00796b"), ("#fdd0a2", "#e6550d"), ("#dadaeb", "#756bb1"), ("#c7e9c0", "#31a354"),
)
_NO_MODULE = ("#e8e8e8", "#9e9e9e")
_MARKED = {"background": "#f2f2f2", "border": "#e00000", "font": "#a0a0a0"}
#: drawings with at most this many nodes get each node's polynomial in its tooltip
POLYNOMIAL_LIMIT = 400
#: a polynomial longer than this is cut in the tooltip
TOOLTIP_POLYNOMIAL_CHARS = 300
_FIELD_CHARS = 200
_TYPE_NAMES = {"i": "input", "s": "state", "o": "output", "m": "module invocation", "z": "zoomed-out module"}


@dataclass(frozen=True)
class DrawingInfo:
    """What a drawing holds; :func:`render` sets it as ``network.lipspark``.

    ``edges`` counts the drawn lines (parallel edges of the multiset are one line labelled
    ``×k``), ``edge_multiset`` the edges with their multiplicity; ``marked`` the nodes drawn as
    removed by a deletion; ``polynomials``: whether the tooltips hold polynomials.
    """

    title: str
    nodes: int
    edges: int
    edge_multiset: int
    marked: int
    modules: tuple[str, ...]
    polynomials: bool


@dataclass
class _Drawing:
    graph: GraphIndex
    positions: np.ndarray  # sorted positions in ``graph``
    marked: np.ndarray  # bool over ``positions``
    title: str


# ---------------------------------------------------------------------------------- selection


def _select(obj: Any, title: str | None) -> _Drawing:
    """What to draw for a GraphIndex, a query Result or a DeletionResult."""
    if isinstance(obj, GraphIndex):
        g, pos, removed, default = obj, np.arange(len(obj), dtype=np.int64), None, "provenance graph"
    elif isinstance(obj, DeletionResult):
        g = obj.graph
        pos, removed = np.arange(len(g), dtype=np.int64), np.flatnonzero(obj.removed)
        default = f"deletion: {len(removed)} node(s) removed"
    elif isinstance(obj, Result):
        if obj.graph is None:
            raise LipsparkError(f"the result of `{obj.statement}` ({obj.kind}) has no graph to draw; "
                                "draw a view, a trace (ancestors, descendants, subgraph, show) or a delete")
        g = obj.graph
        pos = np.arange(len(g), dtype=np.int64) if obj.nodes is None else np.unique(np.asarray(obj.nodes, dtype=np.int64))
        removed = None if obj.removed is None else np.asarray(obj.removed, dtype=np.int64)
        default = obj.statement
    else:
        raise TypeError(f"cannot draw a {type(obj).__name__}: expected a GraphIndex, a query Result or a DeletionResult")
    marked = np.zeros(len(pos), dtype=bool)
    if removed is not None and len(removed) and len(pos):
        marked = np.isin(pos, removed)
    return _Drawing(g, pos, marked, default if title is None else title)


def _guard(d: _Drawing, max_nodes: int) -> None:
    n = len(d.positions)
    if n <= max_nodes:
        return
    mods = [str(m) for m in d.graph.distinct("module", d.positions)]
    some = ", ".join(sorted(mods)[:6]) or "M1, M2"
    raise LipsparkError(
        f"{n} nodes to draw, more than the limit of {max_nodes}: zoom out modules first (`zoomout {some}`), "
        "or draw a part of the graph (`subgraph SEL`, `ancestors SEL`, `descendants SEL`), "
        "or raise the limit (max_nodes=..., --max-nodes N) if your browser can take it")


# ---------------------------------------------------------------------------------- labels and tooltips


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n] + f"… ({len(s)} characters)"


def _plain(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, float) and np.isnan(v):
        return None
    if str(v) == "<NA>":
        return None
    return v.item() if hasattr(v, "item") else v


def module_colours(g: GraphIndex) -> dict[str, tuple[str, str]]:
    """(background, border) colour of every module of ``g``: :data:`PALETTE` in sorted name order.

    Colours depend on the graph's modules only, so a part of a graph is drawn in the colours of
    the whole.

    >>> import pandas as pd
    >>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": "p", "op": "token", "label": ["a", "b"], "module": ["dealer1", "agg"]}),
    ...                      pd.DataFrame({"src": [], "dst": []}))
    >>> module_colours(g)
    {'agg': ('#aec7e8', '#1f77b4'), 'dealer1': ('#ffbb78', '#ff7f0e')}
    """
    names = sorted(str(m) for m in g.distinct("module"))
    return {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(names)}


def _polynomials(g: GraphIndex, pos: np.ndarray, lv: np.ndarray) -> dict[int, str]:
    """Polynomial text of every drawn node (positions in ``g``); sub-expressions are shared by
    computing from the rightmost nodes first, whose memo covers their ancestors."""
    memo: dict[int, Any] = {}
    failed: dict[int, str] = {}
    for p in pos[np.argsort(-lv, kind="stable")].tolist():
        if p in memo or p in failed:
            continue
        try:
            memo.update(expressions(g, p))
        except (LipsparkError, KeyError, IndexError, ValueError, TypeError) as err:
            failed[p] = f"unavailable ({type(err).__name__}: {err})"
    out: dict[int, str] = {}
    for p in pos.tolist():
        if p in failed:
            out[p] = failed[p]
        elif p in memo and not isinstance(memo[p], Tensor):  # a ⊗ has no polynomial of its own
            out[p] = str(memo[p])
    return out


def _edges_html(edges: list[EdgeData]) -> list[str]:
    """The data on a zoomed-out invocation's edges, for its hover title: each relation's count
    and change, and its sample rows with their polynomials, escaped."""
    e = html.escape
    lines = ["<b>the data on its edges</b> (rows; change since the previous execution; first rows with their polynomials):"]
    for d in edges:
        lines.append(f"{e(_short(d.name, _FIELD_CHARS))}: {e(d.describe())}")
        for r in d.samples:
            where = "" if r.in_view else " <i>(hidden in this view)</i>"
            lines.append(f"&nbsp;&nbsp;{e(_short(sample_text(r.values), _FIELD_CHARS))}: "
                         f"<code>{e(_short(r.polynomial, TOOLTIP_POLYNOMIAL_CHARS))}</code>{where}")
    return lines


def _tooltip(g: GraphIndex, p: int, row: dict[str, Any], label: str, polynomial: str | None, with_polynomials: bool, marked: bool,
             change: tuple[Any, Any] | None, edges: list[EdgeData] | None = None) -> str:
    e = html.escape
    t = NODE_TYPES[g.type_code[p]]
    lines = [f"<b>{e(_short(label, _FIELD_CHARS))}</b>"]
    if marked:
        lines.append('<span style="color:#e00000">removed by the deletion</span>')
    lines.append(f"id: {int(g.ids[p])}")
    lines.append("kind: " + ("v-node (value)" if g.is_v[p] else "p-node (provenance)"))
    if t:
        lines.append(f"type: {t} ({_TYPE_NAMES[t]})")
    for key in ("module", "node", "execution", "invocation", "relation", "column"):
        v = _plain(row.get(key))
        if v is not None:
            lines.append(f"{key}: {e(_short(str(v), _FIELD_CHARS))}")
    tup = _plain(row.get("tuple"))
    if tup is not None:
        try:
            parsed = json.loads(tup) if isinstance(tup, str) else tup
        except ValueError:
            parsed = tup
        if isinstance(parsed, dict):
            cells = ", ".join(f"{e(str(k))} = {e(_short(str(v), _FIELD_CHARS))}" for k, v in parsed.items())
        else:
            cells = e(_short(str(parsed), _FIELD_CHARS))
        lines.append(f"tuple: {cells}")
    value = _plain(row.get("value"))
    if g.is_v[p] and value is not None:
        lines.append(f"value: {e(_short(str(value), _FIELD_CHARS))}")
    if change is not None:
        after = "? (the graph cannot recompute it)" if change[1] is UNKNOWN else str(_plain(change[1]))
        lines.append(f"after the deletion: {e(_short(after, _FIELD_CHARS))}")
    if not with_polynomials:
        lines.append(f"polynomial: use <code>polynomial node {int(g.ids[p])}</code>")
    elif polynomial is not None:
        lines.append(f"polynomial: <code>{e(_short(polynomial, TOOLTIP_POLYNOMIAL_CHARS))}</code>")
    if edges:
        lines += _edges_html(edges)
    # pyvis swaps in a popup that sets innerHTML to any title containing "href"; the text of a
    # title never needs that, and "hr&#101;f" reads "href" all the same
    return '<div class="lipspark-tip">' + "<br>".join(lines).replace("href", "hr&#101;f") + "</div>"


# ---------------------------------------------------------------------------------- the page


#: label font size (pixels at zoom 1) and the width of one of its characters, to space the columns
FONT_SIZE = 13
_CHAR_WIDTH = 7.6
_NODE_MARGIN = 4
_ELLIPSE_MARGIN = 2

# Positions are computed (lipspark.viz.layout): no hierarchical layout, no physics. Labels are
# drawn down to 3-pixel text (vis.js's default hides them below 5) so an overview keeps them.
_OPTIONS: dict[str, Any] = {
    "layout": {"hierarchical": {"enabled": False}, "improvedLayout": False, "randomSeed": 1},
    "physics": {"enabled": False},
    "interaction": {"hover": True, "tooltipDelay": 150, "multiselect": True},
    "nodes": {"font": {"size": FONT_SIZE, "face": "sans-serif"}, "borderWidth": 1.5, "size": 10, "margin": _NODE_MARGIN,
              "scaling": {"label": {"drawThreshold": 3}}},
    "edges": {"arrows": {"to": {"enabled": True, "scaleFactor": 0.5}}, "color": {"color": "#9a9a9a", "highlight": "#333333"},
              "smooth": {"enabled": True, "type": "cubicBezier", "forceDirection": "horizontal", "roundness": 0.5},
              "font": {"size": 11, "align": "middle"}, "width": 1},
}

_STYLE = """
<style>
#lipspark-legend { position: fixed; top: 10px; right: 10px; z-index: 10; max-width: 320px; max-height: 90vh; overflow: auto;
  background: rgba(255,255,255,0.94); border: 1px solid #bbb; border-radius: 6px; padding: 6px 10px;
  font: 12px/1.45 sans-serif; color: #222; box-shadow: 0 1px 4px rgba(0,0,0,0.15); }
#lipspark-legend summary { cursor: pointer; font-weight: bold; }
#lipspark-legend table { border-collapse: collapse; }
#lipspark-legend td { padding: 1px 4px; vertical-align: middle; }
#lipspark-legend .sw { display: inline-block; width: 14px; height: 12px; border: 1.5px solid; border-radius: 2px; vertical-align: middle; }
.lipspark-tip { font: 12px/1.4 sans-serif; max-width: 520px; white-space: normal; overflow-wrap: anywhere; }
.lipspark-tip code { font: 11px monospace; }
body { margin: 4px; }
@media (min-width: 900px) {  /* room for the legend beside the drawing */
  #mynetwork { width: calc(100% - 312px) !important; }
  #lipspark-legend { width: 280px; max-width: none; }
}
</style>
"""

# Tooltip strings hold escaped data and our own markup; vis.js 9 shows a string title as plain
# text, so give it an element holding that (already safe) HTML instead; then fit the view.
_SCRIPT = """
<script type="text/javascript">
(function () {
  if (typeof nodes === "undefined" || !nodes) { return; }
  var update = [];
  nodes.forEach(function (n) {
    if (typeof n.title === "string") {
      var div = document.createElement("div");
      div.innerHTML = n.title;
      update.push({id: n.id, title: div.firstChild || div});
    }
  });
  nodes.update(update);
  if (typeof network !== "undefined" && network) {  // the whole drawing in view, frames and headings included
    var view = function (draw) {
      var b = window.lipsparkBounds, c = document.querySelector("#mynetwork canvas");
      if (b && c && c.clientWidth && c.clientHeight) {
        var scale = Math.min(c.clientWidth / (b[2] - b[0]), c.clientHeight / (b[3] - b[1]), 1.5);
        network.moveTo({position: {x: (b[0] + b[2]) / 2, y: (b[1] + b[3]) / 2}, scale: scale});
      } else {
        network.fit();
      }
      if (draw) { network.redraw(); }
    };
    var moved = false, resized = false;  // moved by the reader: then a resize keeps their view
    network.on("dragStart", function () { moved = true; });
    network.on("zoom", function () { moved = true; });
    network.on("resize", function () { resized = !moved; });  // (vis.js then rescales the view: undo that at the next drawing)
    network.on("initRedraw", function () { if (resized) { resized = false; view(false); } });
    view(true);  // now, and once drawn (the canvas may have changed size)
    network.once("afterDrawing", function () { setTimeout(function () { view(true); }, 0); });
  }
})();
</script>
"""

# The frames of module invocations and the execution headings, drawn on the canvas under the
# nodes (plain fillText); the data is JSON with < > & ' escaped, like vis.js's node data.
_FRAMES_SCRIPT = """
<script type="text/javascript">
(function () {
  if (typeof network === "undefined" || !network) { return; }
  var d = %s;
  window.lipsparkBounds = d.bounds;  // what the first view fits: the frames and headings with the nodes
  network.on("beforeDrawing", function (ctx) {
    var sc = network.getScale(), k = Math.min(Math.max(1, 0.75 / sc), 2.5);  // captions legible when zoomed out, yet not over each other
    ctx.save();
    d.frames.forEach(function (f) {
      ctx.fillStyle = f.fill; ctx.strokeStyle = f.border; ctx.lineWidth = 1.2 * k; ctx.setLineDash([7 * k, 4 * k]);
      ctx.beginPath(); ctx.rect(f.left, f.top, f.right - f.left, f.bottom - f.top); ctx.fill(); ctx.stroke();
      ctx.setLineDash([]); ctx.fillStyle = "#333"; ctx.font = "bold " + 13 * k + "px sans-serif"; ctx.textAlign = "left"; ctx.textBaseline = "bottom";
      var t = f.caption, room = f.right - f.left;  // cut to the frame's width (when zoomed out, captions grow)
      if (ctx.measureText(t).width > room) { while (t.length > 1 && ctx.measureText(t + "…").width > room) { t = t.slice(0, -1); } t += "…"; }
      ctx.fillText(t, f.left + 2, f.top - 4 * k);
    });
    ctx.font = "bold " + 20 * k + "px sans-serif"; ctx.fillStyle = "#222"; ctx.textAlign = "center"; ctx.textBaseline = "bottom";
    d.executions.forEach(function (e) { ctx.fillText(e.caption, (e.left + e.right) / 2, d.top - 24 * k); });
    ctx.strokeStyle = "#c8c8c8"; ctx.lineWidth = 2 * k;
    d.separators.forEach(function (x) { ctx.beginPath(); ctx.moveTo(x, d.top - 48 * k); ctx.lineTo(x, d.bottom); ctx.stroke(); });
    ctx.restore();
  });
})();
</script>
"""


def _js_json(obj: Any) -> str:
    """JSON safe inside a ``<script>``: ``<``, ``>``, ``&``, ``'`` and the JavaScript line separators escaped."""
    text = json.dumps(obj, ensure_ascii=False, sort_keys=True)
    for ch in "<>&'\u2028\u2029":
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return text


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _frames(lay: Layout, colours: dict[str, tuple[str, str]]) -> str:
    """The script drawing the layout's frames, execution headings and the lines between executions."""
    frames = []
    for f in lay.frames:
        bg, border = colours.get(f.module, _NO_MODULE) if f.module is not None else _NO_MODULE
        frames.append({"left": f.left, "top": f.top, "right": f.right, "bottom": f.bottom, "caption": f.caption,
                       "fill": _rgba(bg, 0.16), "border": border})
    top = min((f.top for f in lay.frames), default=0.0)
    bottom = max((f.bottom for f in lay.frames), default=0.0)
    heads = [{"caption": f"execution {e}", "left": a, "right": b} for e, a, b in lay.executions]
    seps = [round((lay.executions[i][2] + lay.executions[i + 1][1]) / 2, 1) for i in range(len(lay.executions) - 1)]
    left = min((f.left for f in lay.frames), default=0.0)
    right = max((f.right for f in lay.frames), default=0.0)
    bounds = [round(left - 20, 1), round(top - 90, 1), round(right + 20, 1), round(bottom + 20, 1)]  # headings above the frames
    data = {"frames": frames, "executions": heads, "separators": seps, "top": round(top, 1), "bottom": round(bottom, 1), "bounds": bounds}
    return _FRAMES_SCRIPT % _js_json(data)


_SVG = {
    "p": '<svg width="26" height="16"><ellipse cx="13" cy="8" rx="11" ry="6.5" fill="#fff" stroke="#555" stroke-width="1.5"/></svg>',
    "v": '<svg width="26" height="16"><rect x="6" y="1.5" width="13" height="13" fill="#fff" stroke="#555" stroke-width="1.5"/></svg>',
    "m": '<svg width="26" height="16"><polygon points="13,1 20,8 13,15 6,8" fill="#fff" stroke="#555" stroke-width="1.5"/></svg>',
    "z": '<svg width="26" height="16"><rect x="1.5" y="2" width="23" height="12" rx="5" fill="#fff" stroke="#555" stroke-width="2"/></svg>',
    "x": '<svg width="26" height="16"><ellipse cx="13" cy="8" rx="11" ry="6.5" fill="#f2f2f2" stroke="#e00000" stroke-width="2" stroke-dasharray="4 2"/></svg>',
    "e": '<svg width="26" height="16"><line x1="2" y1="8" x2="19" y2="8" stroke="#8a8a8a" stroke-width="1.5"/><polygon points="24,8 18,4.5 18,11.5" fill="#8a8a8a"/></svg>',
}


def _legend(info: DrawingInfo, colours: dict[str, tuple[str, str]], with_none: bool, with_edges: bool = False) -> str:
    e = html.escape
    rows = [
        f"<tr><td>{_SVG['p']}</td><td>p-node (provenance): a token <code>Cars:C2</code>, <code>·</code>, <code>+</code>, "
        "<code>δ</code>, a black box</td></tr>",
        f"<tr><td>{_SVG['v']}</td><td>v-node (value): a constant, <code>⊗</code>, <code>Count=2</code> (function=value), "
        "a black box <code>calcBid=19500.0</code></td></tr>",
        f"<tr><td>{_SVG['m']}</td><td>module invocation <i>[m]</i> <code>M_module[execution]</code></td></tr>",
        "<tr><td><code>[s] R(…)</code></td><td>input, state or output node: type, relation, tuple (<code>R.col=v</code>: a value)</td></tr>",
        f"<tr><td>{_SVG['z']}</td><td>zoomed-out module <i>[z]</i></td></tr>",
        f"<tr><td>{_SVG['e']}</td><td>used by (input → derived node); ×k: used k times</td></tr>",
    ]
    if with_edges:
        rows.append("<tr><td><code>R 412 +3−1</code></td><td>on a zoomed-out module: each output relation, its rows and their change "
                    "since the previous execution (added−removed; <code>new</code>: none before); hover it for every relation it "
                    "read and wrote, with sample rows and their polynomials</td></tr>")
    if info.marked:
        rows.append(f"<tr><td>{_SVG['x']}</td><td>removed by the deletion (red dashed border, greyed): {info.marked}</td></tr>")
        rows.append("<tr><td><code>2→1</code></td><td>a value the deletion changed, before→after (thick border); "
                    "<code>?</code>: the graph cannot recompute it</td></tr>")
    types = "".join(f"<tr><td><i>[{t}]</i></td><td>{_TYPE_NAMES[t]}</td></tr>" for t in "isomz")
    mods = "".join(f'<tr><td><span class="sw" style="background:{colours[m][0]};border-color:{colours[m][1]}"></span></td>'
                   f"<td>{e(m)}</td></tr>" for m in info.modules)
    if with_none:
        mods += (f'<tr><td><span class="sw" style="background:{_NO_MODULE[0]};border-color:{_NO_MODULE[1]}"></span></td>'
                 "<td><i>no module</i> (base tuples, workflow inputs)</td></tr>")
    counts = f"{info.nodes} nodes, {info.edges} edges" + (f" ({info.edge_multiset} with multiplicity)" if info.edge_multiset != info.edges else "")
    poly = "hover a node for its attributes and polynomial" if info.polynomials else "hover a node for its attributes (polynomials: <code>polynomial node ID</code>)"
    return (f'<div id="lipspark-legend"><details open><summary>{e(info.title)}</summary>'
            f"<div>{counts}; one execution per column, its module invocations framed, in workflow order; {poly}</div>"
            f"<table>{''.join(rows)}</table><b>node types</b><table>{types}</table>"
            f"<b>modules</b><table>{mods or '<tr><td>(none)</td></tr>'}</table></details></div>")


_REMOTE = [
    re.compile(r'<link\b[^>]*\bhref="https?://[^"]*"[^>]*>\s*', re.IGNORECASE),
    re.compile(r'<script\b[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>\s*', re.IGNORECASE),
    re.compile(r"<center>\s*<h1>\s*</h1>\s*</center>\s*", re.IGNORECASE),
]


def _finish_page(page: str, legend: str, title: str, frames: str = "") -> str:
    """Make pyvis's page self-contained (no CDN links) and add the title, legend, frames and tooltip script."""
    head, sep, rest = page.partition("<body>")
    for rx in _REMOTE:
        head = rx.sub("", head)
    head = head.replace("<head>", f"<head>\n<title>{html.escape(title)}</title>", 1)
    head = head.replace("</head>", _STYLE + "</head>", 1)
    body, sep2, tail = rest.rpartition("</body>")
    if not sep2:
        body, tail = rest, ""
    page = head + sep + body + legend + frames + _SCRIPT + "</body>" + tail
    return page if page.lstrip().lower().startswith("<!doctype") else "<!DOCTYPE html>\n" + page


def _changes(obj: Any) -> dict[int, tuple[Any, Any]]:
    """Node id → (value before, value after) for the values a deletion being drawn changed, or
    that the deletions which made a view being drawn changed (its ``what_if`` values)."""
    if isinstance(obj, Result) and obj.kind == "delete" and "_deletion" in obj.extra:
        obj = obj.extra["_deletion"]  # the deletion the answer was made of (a recompute's values included)
    if isinstance(obj, DeletionResult):
        return {int(c.node): (c.before, c.after) for c in obj.values}
    g = obj.graph if isinstance(obj, Result) else obj
    if isinstance(g, GraphIndex) and g.what_if:  # a view after a delete: its values are the what-if ones
        ids = np.fromiter(g.what_if, dtype=np.int64, count=len(g.what_if))
        at = g.base.lookup(ids)
        before = g.base.column("value", at[at >= 0])  # the captured values
        return {int(node): (b, g.what_if[int(node)]) for node, b in zip(ids[at >= 0].tolist(), before.tolist())}
    return {}


def _edge_data(obj: Any, g: GraphIndex, pos: np.ndarray) -> dict[int, list[EdgeData]]:
    """Zoom node id → the data on the edges of its invocation, for the zoomed-out modules drawn,
    when ``obj`` is a query result of a session on a store (its ``edge_reader``)."""
    reader = obj.edge_reader if isinstance(obj, Result) else None
    if reader is None or not len(pos):
        return {}
    zs = pos[np.asarray(g.op)[pos] == Op.ZOOM]
    if not len(zs):
        return {}
    invocations = [int(i) for i in g.column("invocation", zs).tolist()]
    by_invocation: dict[int, list[EdgeData]] = {}
    for d in reader.edges(g, invocations):
        by_invocation.setdefault(d.invocation, []).append(d)
    return {int(z): by_invocation.get(i, []) for z, i in zip(g.ids[zs].tolist(), invocations)}


def _width(label: str, shape: str, margin: float) -> float:
    """How wide vis.js draws a node with this one-line label (pixels at zoom 1, a little over)."""
    text = len(label) * _CHAR_WIDTH
    if shape == "ellipse":  # vis.js: the label's box widened by its height
        return text + 2 * margin + FONT_SIZE + 2 * margin
    if shape == "diamond":  # the label sits under the shape
        return max(24.0, text)
    return text + 2 * margin


def _build(obj: Any, max_nodes: int, title: str | None) -> tuple[Network, str]:
    from pyvis.network import Network

    d = _select(obj, title)
    _guard(d, max_nodes)
    g, pos = d.graph, d.positions
    lv = levels(g, pos)
    colours = module_colours(g)
    changes = _changes(obj)
    rows = g.frame(pos).astype(object).to_dict("records")
    rows = [{k: (None if v is None or (isinstance(v, float) and v != v) or type(v).__name__ == "NAType" else v) for k, v in r.items()} for r in rows]
    with_poly = len(pos) <= POLYNOMIAL_LIMIT
    polys = _polynomials(g, pos, lv) if with_poly and len(pos) else {}
    edges = _edge_data(obj, g, pos)

    nodes: list[dict[str, Any]] = []
    mods_present: set[str] = set()
    no_module = False
    for k in range(len(pos)):
        p, row = int(pos[k]), rows[k]
        module = _plain(row.get("module"))
        if module is None:
            no_module = True
            bg, border = _NO_MODULE
        else:
            mods_present.add(str(module))
            bg, border = colours.get(str(module), _NO_MODULE)
        op = g.op[p]
        change = changes.get(int(g.ids[p]))
        full = node_label(g, p, row, change)
        mine = edges.get(int(g.ids[p])) if op == Op.ZOOM else None
        if mine:
            full = edge_label(full, mine)
        opts: dict[str, Any] = {"title": _tooltip(g, p, row, full, polys.get(p), with_poly, bool(d.marked[k]), change, mine)}
        margin = _NODE_MARGIN
        if op == Op.INVOCATION:
            shape = "diamond"
        elif op == Op.ZOOM:
            shape = "box"
            opts["shapeProperties"] = {"borderRadius": 12}
            opts["borderWidth"] = 2.5
            opts["margin"] = margin = 10
        elif g.is_v[p]:
            shape = "box"
            opts["shapeProperties"] = {"borderRadius": 0}
        else:
            shape = "ellipse"
            opts["margin"] = margin = _ELLIPSE_MARGIN  # vis.js makes an ellipse twice its label's height
        if change is not None:  # a value the deletion changed: bold border, bold label
            opts["borderWidth"] = 3
            opts["font"] = {"bold": True}
        if d.marked[k]:
            bg, border = _MARKED["background"], _MARKED["border"]
            opts["borderWidth"] = 3
            opts["shapeProperties"] = {**opts.get("shapeProperties", {}), "borderDashes": [6, 4]}
            opts["font"] = {"color": _MARKED["font"]}
        color = {"background": bg, "border": border, "highlight": {"background": bg, "border": "#000000"},
                 "hover": {"background": bg, "border": "#000000"}}
        label = shorten(full)
        nodes.append({"id": str(int(g.ids[p])), "label": label, "shape": shape, "color": color, **opts,
                      "_width": _width(label, shape, margin)})
    lay = layout(g, pos, np.array([n.pop("_width") for n in nodes], dtype=np.float64))

    net = Network(height="calc(100vh - 12px)", width="100%", directed=True, heading="", cdn_resources="in_line")
    net.options = json.loads(json.dumps(_OPTIONS))
    ids = [n["id"] for n in nodes]  # strings: ids past 2**53 are not JavaScript numbers
    for k in np.lexsort((g.ids[pos], lay.y, lay.x)).tolist():  # handed to vis.js column by column, top to bottom
        node = nodes[k]
        net.add_node(node.pop("id"), x=float(lay.x[k]), y=float(lay.y[k]), **node)
    src, dst = _drawn_edges(g, pos)

    pairs: dict[tuple[int, int], int] = {}
    for a, b in zip(src.tolist(), dst.tolist()):
        pairs[(a, b)] = pairs.get((a, b), 0) + 1
    for (a, b), count in sorted(pairs.items()):  # appended directly: pyvis's add_edge scans every node per edge
        edge: dict[str, Any] = {"from": ids[a], "to": ids[b], "arrows": "to"}
        if count > 1:
            edge["label"] = f"×{count}"
        if g.op[pos[a]] == Op.INVOCATION:  # the invocation is a factor of each of its inputs, states and outputs: drawn faint
            edge["color"] = {"color": "#d4d4d4", "highlight": "#333333"}
            edge["width"] = 0.6
        if d.marked[a] or d.marked[b]:
            edge["color"] = {"color": "#e88a8a", "highlight": "#e00000"}
            edge["dashes"] = True
        net.edges.append(edge)

    info = DrawingInfo(d.title, len(pos), len(pairs), len(src), int(d.marked.sum()), tuple(sorted(mods_present)), with_poly)
    net.lipspark = info
    page = _finish_page(net.generate_html(), _legend(info, colours, no_module, any(edges.values())), d.title, _frames(lay, colours))
    net.html = page
    return net, page


def _write(path: str, page: str) -> None:
    """Write ``page`` to ``path`` atomically (a temporary file in the same directory, then rename)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    except OSError as err:
        raise LipsparkError(f"cannot write {path}: {err.strerror}") from err
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(page)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise LipsparkError(f"cannot write {path}: {err.strerror}") from err
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------------------------- API


def render(obj: Any, path: str | None = None, *, max_nodes: int = 1500, title: str | None = None) -> Network:
    """Draw a provenance graph, query result or deletion as an interactive vis.js network.

    Parameters
    ----------
    obj
        A :class:`~lipspark.graph.index.GraphIndex` (drawn whole); a query
        :class:`~lipspark.query.engine.Result` (its ``graph``, restricted to its ``nodes`` when
        set; a ``delete`` result draws the graph it ran on with the removed nodes marked); or a
        :class:`~lipspark.query.deletion.DeletionResult` (its graph, removed nodes marked).
    path
        Where to write the HTML page (parent folders are created; written atomically). None:
        write nothing; the page is the network's ``html`` attribute.
    max_nodes
        Refuse to draw more nodes than this (:class:`~lipspark.errors.LipsparkError`, telling
        how to zoom out or select a part).
    title
        Shown in the legend and as the page title; default: the statement, or "provenance graph".

    Returns
    -------
    pyvis.network.Network
        The network; ``network.html`` is the page, ``network.lipspark`` a :class:`DrawingInfo`.

    Examples
    --------
    >>> import pandas as pd
    >>> from lipspark.query import Session
    >>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2, 3], "kind": "p", "op": ["token", "token", "·"], "label": ["R:a", "R:b", "·"],
    ...                                    "relation": ["R", "R", None]}),
    ...                      pd.DataFrame({"src": [1, 2], "dst": [3, 3]}))
    >>> r = Session(g).run("delete node 1")[0]
    >>> net = render(r)
    >>> net.lipspark.marked, [n["shapeProperties"]["borderDashes"] for n in net.nodes if "borderDashes" in n.get("shapeProperties", {})]
    (2, [[6, 4], [6, 4]])
    >>> render(g, max_nodes=2)
    Traceback (most recent call last):
    ...
    lipspark.errors.LipsparkError: 3 nodes to draw, more than the limit of 2: zoom out modules first (`zoomout M1, M2`), or draw a part of the graph (`subgraph SEL`, `ancestors SEL`, `descendants SEL`), or raise the limit (max_nodes=..., --max-nodes N) if your browser can take it
    """
    net, page = _build(obj, max_nodes, title)
    if path is not None:
        _write(path, page)
    return net


def to_html(obj: Any, *, max_nodes: int = 1500, title: str | None = None) -> str:
    """The self-contained HTML page :func:`render` draws for ``obj`` (nothing is written).

    >>> import pandas as pd
    >>> g = GraphIndex.build(pd.DataFrame({"id": [1], "kind": "p", "op": "token", "label": ["R:<b>"]}), pd.DataFrame({"src": [], "dst": []}))
    >>> page = to_html(g, title="<R>")
    >>> "<title>&lt;R&gt;</title>" in page, "R:<b>" in page
    (True, False)
    """
    return _build(obj, max_nodes, title)[1]


def repr_html(obj: Any, *, max_nodes: int = 1500, height: int = 720) -> str | None:
    """HTML showing ``obj`` inline in a Jupyter notebook: the page of :func:`to_html` in an
    ``<iframe srcdoc=...>`` (escaped, sandboxed: scripts run, nothing else is allowed).

    Used as ``_repr_html_`` of graphs (importing :mod:`lipspark.viz` sets
    :attr:`GraphIndex.html_renderer <lipspark.graph.index.GraphIndex.html_renderer>`) and of results;
    returns None for a result without a graph (the notebook then shows its text), and a short
    message instead of the drawing when it is too large.

    >>> import pandas as pd
    >>> g = GraphIndex.build(pd.DataFrame({"id": [1], "kind": "p", "op": "token", "label": ["R:a"]}), pd.DataFrame({"src": [], "dst": []}))
    >>> frame = repr_html(g)
    >>> frame.startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;'), 'sandbox="allow-scripts"' in frame, "<script" in frame
    (True, True, False)
    >>> print(repr_html(g, max_nodes=0))  # doctest: +ELLIPSIS
    <pre class="lipspark-error">lipspark: 1 nodes to draw, more than the limit of 0: zoom out ...</pre>
    """
    if isinstance(obj, Result) and obj.graph is None:
        return None
    try:
        page = to_html(obj, max_nodes=max_nodes)
    except LipsparkError as err:
        return f'<pre class="lipspark-error">lipspark: {html.escape(str(err))}</pre>'
    return (f'<iframe srcdoc="{html.escape(page, quote=True)}" sandbox="allow-scripts" '
            f'style="width:100%;height:{int(height)}px;border:1px solid #ddd" loading="lazy"></iframe>')
