(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (e) { errors.push("error: " + e.message); });
  document.addEventListener("securitypolicyviolation", function (e) {
    errors.push("csp: " + e.violatedDirective);
  });
  var root = document.documentElement;
  var table = document.getElementById("findings-table");
  var form = document.getElementById("filters");
  var shown = document.getElementById("shown");
  var bodies = table ? Array.prototype.slice.call(table.querySelectorAll("tbody.finding")) : [];
  var STATUS = ["open", "unverified", "refuted", "suppressed", "baselined"];
  var state = { sev: null, status: null, cwe: "", path: "", sort: "severity", dir: "desc" };

  function boxes(name) {
    return form ? Array.prototype.slice.call(form.querySelectorAll('input[name="' + name + '"]')) : [];
  }
  function fromForm() {
    state.sev = boxes("sev").filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
    state.status = boxes("status").filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
    state.cwe = form ? form.elements.cwe.value : "";
    state.path = form ? form.elements.path.value : "";
  }
  function toForm() {
    boxes("sev").forEach(function (b) { b.checked = state.sev.indexOf(b.value) >= 0; });
    boxes("status").forEach(function (b) { b.checked = state.status.indexOf(b.value) >= 0; });
    if (form) {
      var select = form.elements.cwe;
      var known = Array.prototype.some.call(select.options, function (o) { return o.value === state.cwe; });
      select.value = known ? state.cwe : "";
      state.cwe = select.value;
      form.elements.path.value = state.path;
    }
  }
  function visible(b) {
    var path = state.path.toLowerCase();
    return state.sev.indexOf(b.dataset.sev) >= 0 &&
      state.status.indexOf(b.dataset.status) >= 0 &&
      (state.cwe === "" || b.dataset.cwe === state.cwe) &&
      (path === "" || b.dataset.path.toLowerCase().indexOf(path) >= 0);
  }
  function apply() {
    var n = 0;
    bodies.forEach(function (b) {
      var v = visible(b);
      b.hidden = !v;
      if (v) { n += 1; }
    });
    if (shown) { shown.textContent = n + " of " + bodies.length + " shown"; }
    root.setAttribute("data-visible", String(n));
    return n;
  }
  function key(b, k) {
    switch (k) {
      case "severity": return [Number(b.dataset.rank), b.dataset.path, Number(b.dataset.line)];
      case "status": return [STATUS.indexOf(b.dataset.status), -Number(b.dataset.rank)];
      case "cwe": return [Number(b.dataset.cwen || 1e9), -Number(b.dataset.rank)];
      case "location": return [b.dataset.path, Number(b.dataset.line)];
      case "title": return [b.dataset.title.toLowerCase()];
      case "confidence": return [Number(b.dataset.conf || -1), Number(b.dataset.rank)];
      default: return [Number(b.dataset.order)];
    }
  }
  function cmp(a, b) {
    for (var i = 0; i < a.length; i += 1) {
      if (a[i] < b[i]) { return -1; }
      if (a[i] > b[i]) { return 1; }
    }
    return 0;
  }
  function sort() {
    if (!table) { return; }
    var sign = state.dir === "asc" ? 1 : -1;
    var sorted = bodies.slice().sort(function (a, b) {
      return sign * cmp(key(a, state.sort), key(b, state.sort)) ||
        Number(a.dataset.order) - Number(b.dataset.order);
    });
    sorted.forEach(function (b) { table.appendChild(b); });
    Array.prototype.forEach.call(table.querySelectorAll("th.sortable"), function (th) {
      if (th.dataset.key === state.sort) {
        th.setAttribute("aria-sort", state.dir === "asc" ? "ascending" : "descending");
      } else {
        th.removeAttribute("aria-sort");
      }
    });
  }
  function writeHash() {
    var parts = [
      "sev=" + state.sev.join(","),
      "status=" + state.status.join(","),
      "sort=" + state.sort + "-" + state.dir
    ];
    if (state.cwe) { parts.push("cwe=" + encodeURIComponent(state.cwe)); }
    if (state.path) { parts.push("path=" + encodeURIComponent(state.path)); }
    try { history.replaceState(null, "", "#" + parts.join("&")); } catch (e) { /* a sandboxed frame */ }
  }
  function readHash() {
    var params = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) {
        try { params[kv.slice(0, i)] = decodeURIComponent(kv.slice(i + 1)); } catch (e) { /* ignored */ }
      }
    });
    var list = function (v) { return v === "" ? [] : v.split(","); };
    if ("sev" in params) { state.sev = list(params.sev); }
    if ("status" in params) { state.status = list(params.status); }
    if ("cwe" in params) { state.cwe = params.cwe; }
    if ("path" in params) { state.path = params.path; }
    if (params.sort) {
      var s = params.sort.split("-");
      state.sort = s[0];
      state.dir = s[1] === "asc" ? "asc" : "desc";
    }
    return params;
  }
  function toggle(b, open) {
    var detail = b.querySelector("tr.detail");
    var button = b.querySelector("button.toggle");
    var show = open === undefined ? detail.hidden : open;
    detail.hidden = !show;
    button.setAttribute("aria-expanded", String(show));
    button.textContent = show ? "\u25BE" : "\u25B8";
    return show;
  }

  fromForm();
  var params = readHash();
  toForm();
  sort();
  apply();
  if (form) {
    form.addEventListener("input", function () { fromForm(); apply(); writeHash(); });
    form.addEventListener("submit", function (e) { e.preventDefault(); });
  }
  bodies.forEach(function (b) {
    b.querySelector("tr.row").addEventListener("click", function () { toggle(b); });
  });
  if (table) {
    Array.prototype.forEach.call(table.querySelectorAll("th.sortable"), function (th) {
      th.addEventListener("click", function () {
        if (state.sort === th.dataset.key) {
          state.dir = state.dir === "asc" ? "desc" : "asc";
        } else {
          state.sort = th.dataset.key;
          state.dir = th.dataset.key === "severity" || th.dataset.key === "confidence" ? "desc" : "asc";
        }
        sort();
        writeHash();
      });
    });
  }
  window.addEventListener("beforeprint", function () {
    Array.prototype.forEach.call(document.querySelectorAll("details"), function (d) { d.open = true; });
  });

  // The page's own test (`#selftest=1`): drives the filters, the sort and
  // a row, and writes what it saw into #selftest for the test to read.
  if (params.selftest) {
    var saved = JSON.stringify(state);
    var out = { total: bodies.length, initial: apply(), sev: {}, status: {}, cwe: {}, path: null };
    var all = { sev: boxes("sev").map(function (b) { return b.value; }), status: STATUS.slice() };
    var only = function (field, value) {
      state.sev = field === "sev" ? [value] : all.sev.slice();
      state.status = field === "status" ? [value] : all.status.slice();
      state.cwe = "";
      state.path = "";
      toForm();
      return apply();
    };
    all.sev.forEach(function (s) { out.sev[s] = only("sev", s); });
    all.status.forEach(function (s) { out.status[s] = only("status", s); });
    if (form) {
      Array.prototype.forEach.call(form.elements.cwe.options, function (o) {
        if (o.value) { only(); state.cwe = o.value; toForm(); out.cwe[o.value] = apply(); }
      });
    }
    if (bodies.length) {
      only();
      state.path = bodies[0].dataset.path;
      toForm();
      out.path = { path: state.path, shown: apply() };
      // Typing in the box goes through the form's input event.
      form.elements.path.value = "\u0000no such path\u0000";
      form.dispatchEvent(new Event("input"));
      out.typed = Number(root.getAttribute("data-visible"));
      only();
      state.sort = "severity";
      state.dir = "asc";
      sort();
      var ranks = Array.prototype.map.call(table.querySelectorAll("tbody.finding"), function (b) { return Number(b.dataset.rank); });
      out.sorted_ascending = ranks.every(function (r, i) { return i === 0 || ranks[i - 1] <= r; });
      state.dir = "desc";
      sort();
      var first = table.querySelector("tbody.finding");
      out.first_rank = Number(first.dataset.rank);
      out.opened = toggle(first) && !first.querySelector("tr.detail").hidden;
      out.closed = !toggle(first) && first.querySelector("tr.detail").hidden;
    }
    state = JSON.parse(saved);
    toForm();
    sort();
    apply();
    out.errors = errors;
    var pre = document.getElementById("selftest");
    pre.textContent = JSON.stringify(out);
  }
  root.setAttribute("data-errors", String(errors.length));
  root.setAttribute("data-ready", "ok");
}());
