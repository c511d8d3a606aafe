/* The console's building blocks (console.js uses them through window.LocalCloudConsole): the
 * API client, DOM and SVG element builders that set text as text (never HTML), the pages'
 * links (ARNs, URLs and keys URL-encoded), formats, and the state machine graph: laid out by
 * the vendored dagre (vendor/README.md), drawn as SVG.
 */
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const crumbs = document.getElementById("crumbs");

  // --- small helpers -------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function api(route, params) {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(params || {})) {
      if (value !== undefined && value !== null && value !== "") query.set(key, String(value));
    }
    const text = query.toString();
    const response = await fetch("api/" + route + (text ? "?" + text : ""), { cache: "no-store" });
    let body = null;
    try {
      body = await response.json();
    } catch (e) {
      body = null;
    }
    if (!response.ok) {
      const message = (body && (body.message || body.error)) || response.statusText;
      throw new ApiError(response.status, message);
    }
    return body;
  }

  /** h("a", {href: ..., class: ...}, child, ...): children are nodes or text (never HTML). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== undefined && value !== null) el.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child !== undefined && child !== null) {
        el.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
      }
    }
    return el;
  }

  const machineHref = (arn) => "#/machine/" + encodeURIComponent(arn);
  const executionHref = (arn) => "#/execution/" + encodeURIComponent(arn);
  const queueHref = (url) => "#/queue/" + encodeURIComponent(url);
  const objectHref = (key) => "#/object/" + encodeURIComponent(key);
  const objectsHref = (q) => "#/objects" + (q ? "?q=" + encodeURIComponent(q) : "");
  /** Only in-page (#/...) and http(s) links from the application's data; anything else: none. */
  const safeHref = (href) => (typeof href === "string" && /^(#\/|https?:\/\/)/.test(href) ? href : null);

  function when(iso) {
    if (!iso) return "";
    const date = new Date(iso);
    return isNaN(date) ? iso : date.toLocaleString();
  }

  function duration(ms) {
    if (ms === null || ms === undefined) return "";
    if (ms < 1000) return ms + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
    const minutes = Math.floor(ms / 60000);
    if (minutes < 60) return minutes + " min " + Math.round((ms % 60000) / 1000) + " s";
    return Math.floor(minutes / 60) + " h " + (minutes % 60) + " min";
  }

  function pretty(value) {
    if (value === null || value === undefined) return "";
    if (typeof value !== "string") return JSON.stringify(value, null, 2);
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch (e) {
      return value;
    }
  }

  function statusSpan(status) {
    return h("span", { class: "status status-" + status }, status);
  }

  function errorBox(error) {
    const prefix = error instanceof ApiError && error.status === 404 ? "Not found: " : "Error: ";
    return h("div", { class: "error", role: "alert" }, prefix + (error.message || String(error)));
  }

  function setCrumbs(...items) {
    crumbs.replaceChildren();
    items.forEach((item, i) => {
      if (i) crumbs.appendChild(document.createTextNode(" › "));
      crumbs.appendChild(item.href ? h("a", { href: item.href }, item.text) : h("span", {}, item.text));
    });
  }

  const nameOf = (arn) => String(arn || "").split(":").pop();

  // --- graph ---------------------------------------------------------------------------
  const CHAR = 7; // px per character at 12px, roughly

  function nodeSize(node) {
    if (node.type === "Start" || node.type === "End") return { width: 64, height: 28 };
    const sub = node.resource || node.type;
    const width = Math.max(100, Math.min(320, Math.max(node.label.length * CHAR, sub.length * 6) + 36));
    return { width, height: 44 };
  }

  /** Lays out and draws graph (console/graph.py's nodes/edges/groups) as an SVG element.
   *  Every node is one rect[data-node-id], every edge one path[data-source][data-target]
   *  [data-kind]; a Map's or Parallel's groups are dashed frames (dagre clusters) below it. */
  function drawGraph(graph, options) {
    const opts = options || {};
    const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
    g.setGraph({ rankdir: "TB", nodesep: 30, ranksep: 36, edgesep: 12, marginx: 16, marginy: 16 });
    const groups = new Map(graph.groups.map((group) => [group.id, group]));
    const nodes = new Map(graph.nodes.map((node) => [node.id, node]));
    const cluster = (groupId) => "cluster\u0000" + groupId;
    for (const group of graph.groups) {
      if (group.parent === null || group.parent === undefined) continue;
      g.setNode(cluster(group.id), { label: group.label, clusterLabelPos: "top", paddingTop: 18 });
      const parentNode = nodes.get(group.parent);
      const outer = parentNode && groups.get(parentNode.group);
      if (outer && outer.parent !== null && outer.parent !== undefined) {
        g.setParent(cluster(group.id), cluster(outer.id));
      }
    }
    for (const node of graph.nodes) {
      g.setNode(node.id, Object.assign({ node }, nodeSize(node)));
      const group = groups.get(node.group);
      if (group && group.parent !== null && group.parent !== undefined) g.setParent(node.id, cluster(group.id));
    }
    graph.edges.forEach((edge, index) => {
      const label = edge.label ? edge.label : null;
      g.setEdge(edge.source, edge.target, {
        edge,
        width: label ? Math.min(label.length, 40) * 6 : 0,
        height: label ? 14 : 0,
        labelpos: "c",
      }, "e" + index);
    });
    // Layout only: a Map/Parallel node sits above its frames (a dotted "nest" arrow to each
    // frame's start), and what follows it below them (invisible edges frame end -> successor).
    const successors = new Map();
    for (const edge of graph.edges) {
      if (!successors.has(edge.source)) successors.set(edge.source, []);
      successors.get(edge.source).push(edge.target);
    }
    let extra = 0;
    for (const group of graph.groups) {
      if (group.parent === null || group.parent === undefined || !nodes.has(group.parent)) continue;
      g.setEdge(group.parent, group.id + "#start", { nest: true, width: 0, height: 0 }, "n" + extra++);
      for (const next of successors.get(group.parent) || []) {
        if (nodes.has(group.id + "#end")) {
          g.setEdge(group.id + "#end", next, { invisible: true, width: 0, height: 0, weight: 0 }, "n" + extra++);
        }
      }
    }
    dagre.layout(g);

    const size = g.graph();
    const svg = s("svg", {
      xmlns: SVG,
      width: Math.ceil(size.width || 100),
      height: Math.ceil(size.height || 100),
      viewBox: "0 0 " + Math.ceil(size.width || 100) + " " + Math.ceil(size.height || 100),
      class: "state-graph",
    });
    svg.appendChild(
      s("defs", {},
        s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
          s("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#879596" })))
    );
    const frames = s("g", { class: "groups" });
    const edgesLayer = s("g", { class: "edges" });
    const nodesLayer = s("g", { class: "nodes" });
    svg.append(frames, edgesLayer, nodesLayer);

    for (const group of graph.groups) {
      if (group.parent === null || group.parent === undefined) continue;
      const box = g.node(cluster(group.id));
      if (!box || box.x === undefined) continue;
      const x = box.x - box.width / 2;
      const y = box.y - box.height / 2;
      frames.append(
        s("rect", { class: "group", "data-group-id": group.id, x, y, width: box.width, height: box.height, rx: 6 }),
        s("text", { class: "group-label", x: x + 6, y: y + 12 }, group.label || group.id)
      );
    }

    const visited = new Set(opts.visited || []);
    for (const e of g.edges()) {
      const label = g.edge(e);
      if (!label || label.invisible || !label.points) continue;
      const d = "M " + label.points.map((p) => p.x.toFixed(1) + " " + p.y.toFixed(1)).join(" L ");
      if (label.nest) {
        edgesLayer.appendChild(s("path", { class: "nest", d }));
        continue;
      }
      const edge = label.edge;
      const classes = ["edge", "kind-" + edge.kind];
      if (visited.has(edge.source) && visited.has(edge.target)) classes.push("visited");
      const path = s("path", {
        class: classes.join(" "),
        d,
        "marker-end": "url(#arrow)",
        "data-source": edge.source,
        "data-target": edge.target,
        "data-kind": edge.kind,
      });
      if (edge.label) path.appendChild(s("title", {}, edge.label));
      edgesLayer.appendChild(path);
      if (edge.label && label.x !== undefined) {
        const text = edge.label.length > 40 ? edge.label.slice(0, 39) + "…" : edge.label;
        edgesLayer.appendChild(s("text", { class: "edge-label", x: label.x, y: label.y + 4, "text-anchor": "middle" }, text));
      }
    }

    const retries = opts.retries || new Map();
    for (const node of graph.nodes) {
      const box = g.node(node.id);
      if (!box || box.x === undefined) continue;
      const x = box.x - box.width / 2;
      const y = box.y - box.height / 2;
      const classes = ["node", "type-" + node.type];
      if (visited.has(node.id)) classes.push("visited");
      if (opts.failed === node.id) classes.push("failed");
      const round = node.type === "Start" || node.type === "End" ? box.height / 2 : 4;
      const group = s("g", { class: "node-box" + (opts.onNode ? " clickable" : ""), "data-for": node.id });
      const rect = s("rect", {
        class: classes.join(" "),
        "data-node-id": node.id,
        "data-type": node.type,
        x, y, width: box.width, height: box.height, rx: round,
      });
      const tip = [node.label + " (" + node.type + ")"];
      if (node.resourceArn) tip.push(node.resourceArn);
      if (node.comment) tip.push(node.comment);
      for (const r of node.retry || []) {
        tip.push("Retry " + r.errorEquals.join(", ") + ": max " + r.maxAttempts + ", every " + r.intervalSeconds + " s ×" + r.backoffRate);
      }
      rect.appendChild(s("title", {}, tip.join("\n")));
      group.appendChild(rect);
      const twoLines = !(node.type === "Start" || node.type === "End");
      const label = node.label.length * CHAR > box.width - 12
        ? node.label.slice(0, Math.max(4, Math.floor((box.width - 12) / CHAR) - 1)) + "…"
        : node.label;
      group.appendChild(s("text", { class: "label", x: box.x, y: twoLines ? box.y - 3 : box.y + 4, "text-anchor": "middle" }, label));
      if (twoLines) {
        const sub = node.resource || node.type + (node.mode ? " · " + node.mode : "");
        group.appendChild(s("text", { class: "sub", x: box.x, y: box.y + 13, "text-anchor": "middle" }, sub.length > 48 ? sub.slice(0, 47) + "…" : sub));
      }
      if (node.retry && node.retry.length) {
        group.appendChild(s("text", { class: "retrier", x: x + 4, y: y + 12 }, "↻"));
      }
      const count = retries.get(node.id);
      if (count) {
        group.appendChild(s("text", { class: "retries", x: x + box.width - 4, y: y + 12, "text-anchor": "end", "data-retries": count }, "×" + count));
      }
      if (opts.onNode) group.addEventListener("click", () => opts.onNode(node));
      nodesLayer.appendChild(group);
    }
    return svg;
  }

  window.LocalCloudConsole = {
    ApiError, api, h, append, s, machineHref, executionHref,
    queueHref, objectHref, objectsHref, safeHref, when, duration, pretty,
    statusSpan, errorBox, setCrumbs, nameOf, drawGraph,
  };
})();
