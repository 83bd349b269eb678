// The management console: plain JavaScript over the management HTTP API (/api/...), no
// build step. Each view is a function that fetches what it shows and renders it into <main>;
// the current view is redrawn every REFRESH_MS unless a form in it is being filled in.
"use strict";

const REFRESH_MS = 5000;
const CHART_POINTS = 60;
const main = document.getElementById("main");
const rateHistory = [];  // [{publish, deliver_get, ack}] of the overview, oldest first
let lastGot = { queue: null, text: "" };  // what the queue page's last get returned
let refreshTimer = null;
let generation = 0;  // bumped by each redraw; a view whose data came too late draws nothing

// -- HTTP ------------------------------------------------------------------------------------

function credentials() { return sessionStorage.getItem("auth"); }

async function api(method, path, body) {
  // X-Requested-With: a 401 comes without a Basic challenge, so that the browser does not
  // open its own login dialog over the console's.
  const headers = { "Authorization": "Basic " + credentials(), "X-Requested-With": "XMLHttpRequest" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch("api" + path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401 && path === "/whoami") throw new Error("Login failed");
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) throw new Error((data && data.reason) || response.statusText);
  return data;
}

const q = encodeURIComponent;

// -- rendering helpers -----------------------------------------------------------------------

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function rate(stats, name) {
  const details = stats && stats[name + "_details"];
  return details ? details.rate.toFixed(1) : "0.0";
}

function table(columns, rows) {
  const head = columns.map(([title]) => `<th>${esc(title)}</th>`).join("");
  const body = rows.map((row) => "<tr>" + columns.map(([, cell, numeric]) =>
    `<td${numeric ? ' class="num"' : ""}>${cell(row)}</td>`).join("") + "</tr>").join("");
  return `<table><thead><tr>${head}</tr></thead><tbody>${body ||
    `<tr><td colspan="${columns.length}">none</td></tr>`}</tbody></table>`;
}

function form(id, fields, button) {
  const inputs = fields.map(([name, label, value = ""]) =>
    `<label>${esc(label)}<input name="${name}" value="${esc(value)}"></label>`).join("");
  return `<form class="inline" id="${id}">${inputs}<button type="submit">${esc(button)}</button>` +
    `<span class="result"></span></form>`;
}

// Run ``action`` with the form's values, redraw the view, and say how it went beside the
// (redrawn) form.
function onSubmit(id, action) {
  document.getElementById(id).addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(event.target));
    let message, ok = true;
    try {
      message = (await action(values)) || "done";
      await show(false);
    } catch (error) {
      message = error.message;
      ok = false;
    }
    const result = document.querySelector(`#${id} .result`);
    if (result) {
      result.className = ok ? "result ok" : "result error";
      result.textContent = message;
    }
  });
}

function onClick(selector, action) {
  for (const button of main.querySelectorAll(selector)) {
    button.addEventListener("click", async () => {
      try { await action(button.dataset); await show(false); } catch (error) { alert(error.message); }
    });
  }
}

// -- views -----------------------------------------------------------------------------------

async function overview() {
  const g = generation;
  const o = await api("GET", "/overview");
  if (g !== generation) return;
  const s = o.message_stats;
  rateHistory.push({ publish: s.publish_details.rate, deliver_get: s.deliver_get_details.rate,
                     ack: s.ack_details.rate });
  while (rateHistory.length > CHART_POINTS) rateHistory.shift();
  const totals = { ...o.object_totals, messages: o.queue_totals.messages,
                   ready: o.queue_totals.messages_ready,
                   unacked: o.queue_totals.messages_unacknowledged };
  const boxes = Object.entries(totals).map(([name, value]) =>
    `<div class="total">${esc(name)}<b id="total-${esc(name)}">${esc(value)}</b></div>`).join("");
  const listeners = o.listeners.map((l) => {
    const scheme = { "amqp": "amqp", "amqp/ssl": "amqps", "http": "http" }[l.protocol] || l.protocol;
    return { ...l, url: `${scheme}://${l.ip_address}:${l.port}/` };
  });
  main.innerHTML = `
    <h2>${esc(o.product_name)} ${esc(o.product_version)} — node ${esc(o.node)}</h2>
    <div class="totals">${boxes}</div>
    <h2>Message rates (per second, sampled every 5 s)</h2>
    <canvas id="chart" width="720" height="180"></canvas>
    <div class="legend"><span style="color:#d60">■ publish ${rate(s, "publish")}</span>
      <span style="color:#06b">■ deliver/get ${rate(s, "deliver_get")}</span>
      <span style="color:#390">■ ack ${rate(s, "ack")}</span></div>
    <h2>Listeners</h2>
    ${table([["Protocol", (l) => esc(l.protocol)], ["URL", (l) => esc(l.url)]], listeners)}
    <p>Prometheus: <a href="metrics">/metrics</a>, <a href="metrics/per-object">/metrics/per-object</a></p>`;
  drawChart(document.getElementById("chart"));
}

function drawChart(canvas) {
  const g = canvas.getContext("2d");
  const series = [["publish", "#d60"], ["deliver_get", "#06b"], ["ack", "#390"]];
  const top = Math.max(1, ...rateHistory.flatMap((p) => series.map(([k]) => p[k])));
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.fillStyle = "#888";
  g.fillText(top.toFixed(1) + "/s", 4, 12);
  for (const [key, colour] of series) {
    g.strokeStyle = colour;
    g.beginPath();
    rateHistory.forEach((point, i) => {
      const x = (i / (CHART_POINTS - 1)) * (canvas.width - 10) + 5;
      const y = canvas.height - 5 - (point[key] / top) * (canvas.height - 20);
      if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
    });
    g.stroke();
  }
}

async function queues() {
  const g = generation;
  const list = await api("GET", "/queues");
  if (g !== generation) return;
  const link = (x) => `<a href="#queue/${q(x.vhost)}/${q(x.name)}">${esc(x.name)}</a>`;
  main.innerHTML = `<h2>Queues</h2>` + table([
    ["Virtual host", (x) => esc(x.vhost)], ["Name", link], ["Type", (x) => esc(x.type)],
    ["Ready", (x) => x.messages_ready, true], ["Unacked", (x) => x.messages_unacknowledged, true],
    ["Consumers", (x) => x.consumers, true],
    ["Publish /s", (x) => rate(x.message_stats, "publish"), true],
    ["Deliver /s", (x) => rate(x.message_stats, "deliver_get"), true],
    ["Ack /s", (x) => rate(x.message_stats, "ack"), true],
  ], list) + "<h2>Add a queue</h2>" +
    form("add-queue", [["vhost", "Virtual host", "/"], ["name", "Name"],
                       ["type", "Type (classic, quorum, stream)", "classic"]], "Add queue");
  onSubmit("add-queue", (v) => api("PUT", `/queues/${q(v.vhost)}/${q(v.name)}`,
    { durable: true, arguments: { "x-queue-type": v.type } }));
}

async function queue(vhost, name) {
  const path = `/queues/${q(vhost)}/${q(name)}`;
  const g = generation;
  const [x, bindings] = await Promise.all([api("GET", path), api("GET", path + "/bindings")]);
  if (g !== generation) return;
  main.innerHTML = `<h2>Queue ${esc(name)} in ${esc(vhost)}</h2>` + table([
    ["Type", () => esc(x.type)], ["Durable", () => x.durable], ["Ready", () => x.messages_ready, true],
    ["Unacked", () => x.messages_unacknowledged, true], ["Consumers", () => x.consumers, true],
    ["Publish /s", () => rate(x.message_stats, "publish"), true],
    ["Deliver /s", () => rate(x.message_stats, "deliver_get"), true],
    ["Arguments", () => esc(JSON.stringify(x.arguments))],
  ], [x]) + "<h2>Policy</h2>" + table([
    ["Policy", () => esc(x.policy ?? "")], ["Operator policy", () => esc(x.operator_policy ?? "")],
    ["Effective policy definition", () => esc(JSON.stringify(x.effective_policy_definition ?? {}))],
  ], [x]) + "<h2>Bindings</h2>" + table([
    ["From exchange", (b) => esc(b.source || "(default)")], ["Routing key", (b) => esc(b.routing_key)],
    ["Arguments", (b) => esc(JSON.stringify(b.arguments))],
  ], bindings) + "<h2>Consumers</h2>" + table([
    ["Tag", (c) => esc(c.consumer_tag)], ["Channel", (c) => esc(c.channel_details.name)],
    ["Ack required", (c) => c.ack_required], ["Prefetch", (c) => c.prefetch_count, true],
  ], x.consumer_details) + "<h2>Get messages</h2>" +
    form("get", [["count", "Count", "1"], ["ackmode", "Ack mode", "ack_requeue_true"]], "Get") +
    `<pre id="got" ${lastGot.queue === path ? "" : "hidden"}>${esc(lastGot.text)}</pre>` +
    `<h2>Publish a message</h2>` +
    form("publish", [["payload", "Payload", "hello"]], "Publish") +
    `<h2>Actions</h2><button id="purge">Purge</button> <button id="delete" class="danger">Delete</button>`;
  onSubmit("get", async (v) => {
    const got = await api("POST", path + "/get", { count: v.count, ackmode: v.ackmode, encoding: "auto" });
    lastGot = { queue: path, text: JSON.stringify(got, null, 2) };
    return `${got.length} message(s)`;
  });
  onSubmit("publish", async (v) => {
    const answer = await api("POST", `/exchanges/${q(vhost)}/amq.default/publish`,
      { routing_key: name, payload: v.payload, payload_encoding: "string", properties: {} });
    return answer.routed ? "published" : "not routed";
  });
  document.getElementById("purge").onclick = async () => { await api("DELETE", path + "/contents"); await show(false); };
  document.getElementById("delete").onclick = async () => {
    if (confirm(`Delete queue ${name}?`)) { await api("DELETE", path); location.hash = "#queues"; }
  };
}

async function exchanges() {
  const g = generation;
  const list = await api("GET", "/exchanges");
  if (g !== generation) return;
  main.innerHTML = `<h2>Exchanges</h2>` + table([
    ["Virtual host", (x) => esc(x.vhost)], ["Name", (x) => esc(x.name || "(AMQP default)")],
    ["Type", (x) => esc(x.type)], ["Durable", (x) => x.durable],
    ["In /s", (x) => rate(x.message_stats, "publish_in"), true],
    ["Out /s", (x) => rate(x.message_stats, "publish_out"), true],
  ], list) + "<h2>Add an exchange</h2>" +
    form("add-exchange", [["vhost", "Virtual host", "/"], ["name", "Name"], ["type", "Type", "direct"]],
         "Add exchange");
  onSubmit("add-exchange", (v) => api("PUT", `/exchanges/${q(v.vhost)}/${q(v.name)}`,
    { type: v.type, durable: true }));
}

async function connections() {
  const g = generation;
  const [conns, channels] = await Promise.all([api("GET", "/connections"), api("GET", "/channels")]);
  if (g !== generation) return;
  main.innerHTML = `<h2>Connections</h2>` + table([
    ["Name", (c) => esc(c.name)], ["User", (c) => esc(c.user)], ["Virtual host", (c) => esc(c.vhost)],
    ["Protocol", (c) => esc(c.protocol)], ["Channels", (c) => c.channels, true], ["State", (c) => esc(c.state)],
    ["", (c) => `<button class="close danger" data-name="${esc(c.name)}">Close</button>`],
  ], conns) + `<h2>Channels</h2>` + table([
    ["Name", (c) => esc(c.name)], ["User", (c) => esc(c.user)], ["Consumers", (c) => c.consumer_count, true],
    ["Unacked", (c) => c.messages_unacknowledged, true], ["Prefetch", (c) => c.prefetch_count, true],
    ["Confirm", (c) => c.confirm], ["Publish /s", (c) => rate(c.message_stats, "publish"), true],
  ], channels);
  onClick("button.close", (data) => api("DELETE", `/connections/${q(data.name)}`));
}

async function users() {
  const g = generation;
  const [list, permissions] = await Promise.all([api("GET", "/users"), api("GET", "/permissions")]);
  if (g !== generation) return;
  main.innerHTML = `<h2>Users</h2>` + table([
    ["Name", (u) => esc(u.name)], ["Tags", (u) => esc(u.tags.join(", "))],
  ], list) + `<h2>Permissions</h2>` + table([
    ["User", (p) => esc(p.user)], ["Virtual host", (p) => esc(p.vhost)], ["Configure", (p) => esc(p.configure)],
    ["Write", (p) => esc(p.write)], ["Read", (p) => esc(p.read)],
  ], permissions) + "<h2>Add a user</h2>" +
    form("add-user", [["name", "Name"], ["password", "Password"], ["tags", "Tags", "management"]], "Add user") +
    "<h2>Set permissions</h2>" +
    form("set-permission", [["user", "User"], ["vhost", "Virtual host", "/"], ["configure", "Configure", ".*"],
                            ["write", "Write", ".*"], ["read", "Read", ".*"]], "Set permissions");
  onSubmit("add-user", (v) => api("PUT", `/users/${q(v.name)}`, { password: v.password, tags: v.tags }));
  onSubmit("set-permission", (v) => api("PUT", `/permissions/${q(v.vhost)}/${q(v.user)}`,
    { configure: v.configure, write: v.write, read: v.read }));
}

// Policies and operator policies: each listed with a Delete button, and a form to add one
// (the definition as JSON, as rabbitmqctl set_policy takes it).
const POLICY_KINDS = [["policies", "Policies", "policy"], ["operator-policies", "Operator policies", "operator-policy"]];

async function policies() {
  const g = generation;
  const lists = await Promise.all(POLICY_KINDS.map(([kind]) => api("GET", "/" + kind)));
  if (g !== generation) return;
  main.innerHTML = POLICY_KINDS.map(([kind, title, id], i) => `<h2>${title}</h2>` + table([
    ["Virtual host", (p) => esc(p.vhost)], ["Name", (p) => esc(p.name)], ["Pattern", (p) => esc(p.pattern)],
    ["Apply to", (p) => esc(p["apply-to"])], ["Definition", (p) => esc(JSON.stringify(p.definition))],
    ["Priority", (p) => esc(p.priority), true],
    ["", (p) => `<button class="delete-${id} danger" data-vhost="${esc(p.vhost)}" data-name="${esc(p.name)}">Delete</button>`],
  ], lists[i]) + `<h2>Add ${title.toLowerCase().replace(/ies$/, "y")}</h2>` +
    form("add-" + id, [["vhost", "Virtual host", "/"], ["name", "Name"], ["pattern", "Pattern", "^"],
                       ["apply-to", "Apply to", "queues"], ["priority", "Priority", "0"],
                       ["definition", "Definition (JSON)", '{"max-length": 1000}']], "Add " + title.toLowerCase().replace(/ies$/, "y"))
  ).join("");
  for (const [kind, , id] of POLICY_KINDS) {
    onSubmit("add-" + id, (v) => {
      let definition;
      try { definition = JSON.parse(v.definition); } catch (error) { throw new Error(`definition: ${error.message}`); }
      return api("PUT", `/${kind}/${q(v.vhost)}/${q(v.name)}`,
        { pattern: v.pattern, "apply-to": v["apply-to"], priority: Number(v.priority), definition });
    });
    onClick(`button.delete-${id}`, (data) => api("DELETE", `/${kind}/${q(data.vhost)}/${q(data.name)}`));
  }
}

async function definitions() {
  main.innerHTML = `<h2>Export definitions</h2>
    <button id="export">Download broker definitions</button>
    <h2>Import definitions</h2>
    <p>RabbitMQ's definitions format (a file exported from RabbitMQ imports here).</p>
    <textarea id="import-text" rows="10" cols="80" placeholder='{"queues": [...]}'></textarea><br>
    <input type="file" id="import-file" accept=".json">
    <button id="import">Import</button> <span id="import-result"></span>`;
  document.getElementById("export").onclick = async () => {
    const data = await api("GET", "/definitions");
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)], { type: "application/json" }));
    link.download = "definitions.json";
    link.click();
  };
  document.getElementById("import-file").onchange = async (event) => {
    document.getElementById("import-text").value = await event.target.files[0].text();
  };
  document.getElementById("import").onclick = async () => {
    const result = document.getElementById("import-result");
    try {
      await api("POST", "/definitions", JSON.parse(document.getElementById("import-text").value));
      result.className = "ok";
      result.textContent = "imported";
    } catch (error) {
      result.className = "error";
      result.textContent = error.message;
    }
  };
}

// -- routing, refresh and login --------------------------------------------------------------

const VIEWS = { overview, queues, queue, exchanges, connections, users, policies, definitions };

async function show(fromTimer) {
  const editing = main.contains(document.activeElement) && document.activeElement.tagName !== "BUTTON";
  if (fromTimer && (editing || location.hash.startsWith("#definitions"))) return;
  const [name, ...args] = (location.hash.slice(1) || "overview").split("/").map(decodeURIComponent);
  generation += 1;
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.getAttribute("href") === "#" + (name === "queue" ? "queues" : name));
  }
  try {
    await (VIEWS[name] || overview)(...args);
  } catch (error) {
    main.innerHTML = `<p class="error">${esc(error.message)}</p>`;
  }
}

async function start() {
  const login = document.getElementById("login");
  try {
    if (!credentials()) throw new Error("not logged in");
    const me = await api("GET", "/whoami");
    document.getElementById("who").textContent = `${me.name} (${me.tags.join(", ")})`;
  } catch (error) {
    login.hidden = false;
    main.hidden = true;
    return;
  }
  login.hidden = true;
  main.hidden = false;
  await show(false);
  clearInterval(refreshTimer);
  refreshTimer = setInterval(() => show(true), REFRESH_MS);
}

document.getElementById("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const values = Object.fromEntries(new FormData(event.target));
  sessionStorage.setItem("auth", btoa(`${values.user}:${values.password}`));
  await start();
  if (!event.target.hidden) document.getElementById("login-error").textContent = "Login failed";
});
window.addEventListener("hashchange", () => show(false));
start();
