"""The job page's style and script (appmaster/page/jobpage.py puts them in the page): the CSS
of every region, and the script that refreshes the live page and, once the AppMaster is gone,
says how the job ended."""

STYLE = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2329;
 background:#f5f6f8}
header{background:#24292f;color:#fff;padding:10px 20px;display:flex;flex-wrap:wrap;gap:4px 16px;
 align-items:baseline}
header h1{font-size:18px;margin:0}
header .app{font-family:ui-monospace,monospace;color:#c9d1d9}
header nav{margin-left:auto}
header a{color:#9ecbff;margin-left:12px}
main{padding:12px 20px;max-width:1500px}
section{background:#fff;border:1px solid #d8dee4;border-radius:6px;padding:10px 14px;
 margin-bottom:12px}
h2{font-size:15px;margin:0 0 8px}
.scroll{overflow-x:auto}
table{border-collapse:collapse}
#task-table,#task-table table{width:100%}
#task-counts{margin-bottom:8px}
details.task-group summary{cursor:pointer;padding:4px 0;font-weight:600}
th,td{padding:4px 8px;text-align:left;border-bottom:1px solid #eaeef2;white-space:nowrap}
/* a wide job's many columns fit a laptop: long values (container ids, addresses) wrap */
#task-table td.extra,#task-table td.col-yarn_container_id,#task-table td.col-container,
#task-table td.col-address,#task-table td.col-node{white-space:normal;overflow-wrap:anywhere}
thead th{background:#f6f8fa;position:sticky;top:0}
td.col-yarn_container_id,td.col-address,td.col-node{font-family:ui-monospace,monospace;
 font-size:12.5px}
td.num{text-align:right}
td.extra{white-space:normal;min-width:10em}
.state{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:600;color:#fff;
 background:#6e7781}
.state-running{background:#0969da}.state-succeeded{background:#1a7f37}
.state-failed{background:#cf222e}.state-killed{background:#bc4c00}
.updated{color:#57606a;margin-left:12px}
dl.facts{display:flex;flex-wrap:wrap;gap:4px 24px;margin:8px 0 0}
dl.facts dt{color:#57606a;display:inline}dl.facts dt:after{content:":"}
dl.facts dd{display:inline;margin:0 0 0 4px;font-weight:500}
tr.task-running td.col-state{color:#1a7f37;font-weight:600}
tr.task-failed td.col-state{color:#cf222e;font-weight:600}
tr.task-killed td.col-state,tr.task-failing td.col-state,tr.task-lost td.col-state,
tr.task-preempted td.col-state,tr.task-replacing td.col-state,
tr.task-stalled td.col-state{color:#9a6700;font-weight:600}
td.col-state small.ends{color:#9a6700}
#ended{border-color:#bf8700;background:#fff8c5}
#ended.final-succeeded{border-color:#1a7f37;background:#dafbe1}
#ended.final-failed,#ended.final-killed{border-color:#cf222e;background:#ffebe9}
#ended pre{white-space:pre-wrap;font:inherit;margin-bottom:4px}
#report{border-color:#0969da;background:#ddf4ff}#report p{margin:0}
body.ended #task-table{opacity:.7}
.two{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:12px;
 margin-bottom:12px;align-items:start}
.two section{margin-bottom:0}
pre{margin:0;font-size:12.5px}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:8px 16px}
svg.chart,svg.timeline{width:100%;height:auto;font:11px system-ui,sans-serif}
svg.timeline{min-width:640px}
svg .title{font-weight:600;font-size:12px;fill:#1d2329}
svg .tick,svg .caption,svg .legend,svg .empty{fill:#57606a}
svg .grid{stroke:#eaeef2}svg .axis{stroke:#8c959f}
.marks,.bar-keys{color:#57606a;margin:6px 0 0}
.mark-key,.bar-key{margin-right:14px;white-space:nowrap}
.mark-key i{display:inline-block;width:0;height:11px;border-left:2px dashed;margin-right:4px}
.bar-key i{display:inline-block;width:14px;height:9px;margin-right:4px}
"""

# Replaces changed regions in place; once the parts stop coming (the AppMaster is gone),
# asks the ResourceManager how the job ended. Through YARN's proxy the page lives at
# <RM>/proxy/<app id>/pages/tfyarn/, so the RM's REST API is same-origin.
SCRIPT = """
(function () {
  var appId = document.body.dataset.appId, refreshMs = +document.body.dataset.refreshMs;
  var finalStates = ["SUCCEEDED", "FAILED", "KILLED"];
  var proxied = location.pathname.indexOf("/proxy/" + appId + "/") >= 0;
  var rmBase = proxied ? location.pathname.split("/proxy/" + appId + "/")[0] : null;
  var ended = document.getElementById("ended");
  if (proxied) {  // YARN's page for the application, beside skein's
    var yarnLink = document.getElementById("yarn-app");
    yarnLink.href = rmBase + "/cluster/app/" + appId;
    yarnLink.hidden = false;
  }
  var shown = {};  // each region's HTML as last put in place
  var folded = {};  // the reader's open or closed role groups, by id: kept across refreshes
  document.addEventListener("toggle", function (e) {
    if (e.target.classList && e.target.classList.contains("task-group")) {
      folded[e.target.id] = e.target.open;
    }
  }, true);

  function show(kind, title, lines, link) {
    ended.hidden = false;
    ended.className = "final-" + kind.toLowerCase();
    ended.querySelector("h2").textContent = title;
    ended.querySelector("pre").textContent = lines.join("\\n");
    var a = ended.querySelector("a");
    a.hidden = !link;
    if (link) { a.href = link; }
  }

  function apply(parts) {
    Object.keys(parts.regions).forEach(function (name) {
      var el = document.getElementById(name);
      if (el && shown[name] !== parts.regions[name]) {
        el.innerHTML = parts.regions[name];
        shown[name] = parts.regions[name];
        Object.keys(folded).forEach(function (id) {
          var group = document.getElementById(id);
          if (group && el.contains(group)) { group.open = folded[id]; }
        });
      }
    });
    if (finalStates.indexOf(parts.state) >= 0) {
      show(parts.state, "The job has ended: " + parts.state,
           ["The AppMaster is shutting down; this page stops updating."], null);
    } else {
      ended.hidden = true;  // answering again, e.g. after YARN started a new AppMaster attempt
    }
  }

  function askYarn() {
    if (!proxied) {
      show("unknown", "The job page stopped answering",
           ["The job has probably ended. Run: tfyarn status " + appId], null);
      return Promise.resolve(true);
    }
    var appPage = rmBase + "/cluster/app/" + appId;
    return fetch(rmBase + "/ws/v1/cluster/apps/" + appId,
                 {cache: "no-store", headers: {Accept: "application/json"}})
      .then(function (r) { return r.json(); })
      .then(function (doc) {
        var app = doc.app;
        if (["FINISHED", "FAILED", "KILLED"].indexOf(app.state) < 0) {
          show("unknown", "The job page is not answering (YARN says " + app.state + ")",
               ["Retrying..."], appPage);
          return false;
        }
        var final = app.finalStatus === "UNDEFINED" ? app.state : app.finalStatus;
        var badge = document.querySelector("#summary .state");
        badge.textContent = final;
        badge.className = "state state-" + final.toLowerCase();
        document.body.classList.add("ended");
        show(final,
             "The job has ended: " + app.state + ", final status " + app.finalStatus,
             [app.diagnostics || "(no diagnostics)",
              "The table below is the last state this page received. " +
              "The final task table: tfyarn status " + appId],
             appPage);
        return true;
      })
      .catch(function () {
        show("unknown", "The job page stopped answering",
             ["Neither the AppMaster nor the ResourceManager answers. Run: tfyarn status " +
              appId], appPage);
        return false;
      });
  }

  function poll() {
    fetch("parts.json", {cache: "no-store"})
      .then(function (r) {
        var json = (r.headers.get("Content-Type") || "").indexOf("application/json") === 0;
        if (!r.ok || !json) { throw new Error("no parts"); }
        return r.json();
      })
      .then(function (parts) { apply(parts); return false; })
      .catch(askYarn)
      .then(function (done) { if (!done) { setTimeout(poll, refreshMs); } });
  }
  setTimeout(poll, refreshMs);
})();
"""
