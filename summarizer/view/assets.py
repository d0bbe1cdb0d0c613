"""The session page's inline style sheet and script, and the content policy that allows only them.

Nothing is loaded from anywhere: the page must open offline, and the policy forbids every fetch,
so a mistake elsewhere cannot turn untrusted event text into a request or a running script.
"""

from __future__ import annotations

import base64
import hashlib

__all__ = ["CSS", "SCRIPT", "content_policy"]

CSS = """
:root{--bg:#f7f7f5;--fg:#1d1d1f;--muted:#6b6b70;--line:#dcdcd8;--ok:#2f7d32;--bad:#c62828;
--run:#b26a00;--card:#fff;--lane:#eef2f7;--accent:#3558a8}
*{box-sizing:border-box}
body{margin:0;font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
background:var(--bg);color:var(--fg)}
header{padding:12px 20px;border-bottom:1px solid var(--line);background:var(--card)}
header h1{margin:0 0 4px;font-size:20px}
.meta{color:var(--muted);font-size:13px}
.meta b{color:var(--fg);font-weight:600}
main{display:grid;grid-template-columns:minmax(0,1fr) 360px;gap:16px;padding:12px 20px}
@media (max-width:1000px){main{grid-template-columns:1fr}}
.tools{margin:0 0 8px;display:flex;gap:12px;align-items:center;font-size:13px}
.scroll{overflow:auto;max-height:calc(100vh - 150px);border:1px solid var(--line);
background:var(--card);border-radius:6px}
.timeline{display:grid;column-gap:8px;row-gap:4px;padding:0 8px 8px;position:relative}
.lanehead{position:sticky;top:0;z-index:3;background:var(--card);padding:8px 4px 6px;
border-bottom:2px solid var(--accent);font-weight:600;font-size:13px;overflow:hidden}
.lanehead small{display:block;font-weight:400;color:var(--muted);white-space:nowrap;
overflow:hidden;text-overflow:ellipsis}
.life{background:var(--lane);border-radius:4px;z-index:0}
.time{color:var(--muted);font:12px ui-monospace,monospace;padding-top:5px;z-index:1}
.item{z-index:1;background:var(--card);border:1px solid var(--line);border-left:4px solid
var(--line);border-radius:4px;padding:3px 6px;min-width:0;font-size:13px}
.item summary{cursor:pointer;list-style:none;overflow:hidden;text-overflow:ellipsis;
white-space:nowrap}
.item summary::-webkit-details-marker{display:none}
.item[open] summary{white-space:normal}
.item pre{white-space:pre-wrap;word-break:break-word;margin:4px 0 0;font-size:12px;
max-height:240px;overflow:auto;background:#f3f3f0;padding:4px}
.k-call.s-ok{border-left-color:var(--ok)}
.k-call.s-failed,.k-failure{border-left-color:var(--bad);background:#fff5f5}
.k-call.s-running{border-left-color:var(--run)}
.k-prompt{border-left-color:var(--accent);background:#f2f5fc}
.k-agent{border-left-color:#7b1fa2}
.k-compaction{border-left-color:#00838f;background:#effafb}
.k-reply{border-left-color:#555}
.tag{display:inline-block;font-size:11px;padding:0 5px;border-radius:8px;background:#eee;
margin-right:4px;color:#333}
.tag.bad{background:var(--bad);color:#fff}.tag.ok{background:var(--ok);color:#fff}
.tag.run{background:var(--run);color:#fff}
.files{color:var(--muted);font:12px ui-monospace,monospace;word-break:break-all}
.fix{color:var(--ok);font-size:12px}.nofix{color:var(--bad);font-size:12px}
aside section{background:var(--card);border:1px solid var(--line);border-radius:6px;
padding:8px 12px;margin-bottom:12px}
aside h2{font-size:15px;margin:2px 0 6px}
aside ul{margin:0;padding-left:18px}aside li{margin:3px 0}
aside pre{white-space:pre-wrap;word-break:break-word;font-size:12px;max-height:260px;
overflow:auto;background:#f3f3f0;padding:6px;margin:4px 0}
.empty{color:var(--muted)}
a{color:var(--accent)}
.hide-ok .s-ok.k-call{display:none}
.flash{outline:3px solid var(--accent)}
"""

SCRIPT = """
(function(){
  var box=document.getElementById('only-failures');
  var tl=document.getElementById('timeline');
  if(box&&tl){box.addEventListener('change',function(){tl.classList.toggle('hide-ok',box.checked);});}
  document.addEventListener('click',function(ev){
    var a=ev.target.closest?ev.target.closest('a[href^="#e"]'):null;
    if(!a){return;}
    var el=document.getElementById(a.getAttribute('href').slice(1));
    if(!el){return;}
    ev.preventDefault();
    if(el.tagName==='DETAILS'){el.open=true;}
    el.scrollIntoView({block:'center'});
    el.classList.add('flash');
    setTimeout(function(){el.classList.remove('flash');},1500);
  });
})();
"""


def content_policy() -> str:
    """A CSP that allows this page's own inline style and script and nothing else."""
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )
