"""The `--html` report in a real browser: Debian's Chromium driven by Playwright.

For each report (made here with the `dimguard` binary from the repository's fixtures), the page is
loaded from disk (file://) with every network request refused and recorded, and the script checks:

* no console error, no page error, no network request;
* every strip has one mark per accepted value, and every 2-D plot one mark per accepted tuple,
  as the report's JSON says (counted from the JSON, not from the page);
* the page is under 1 MB;
* a linked program's page opens with its joint answer and stays within ten screens of 1000 px
  (its full-page screenshot's height);
* the copy button is reachable with the keyboard and says it copied;
* every plot has a text alternative (role=img with aria-label);
* a full-page screenshot is kept in OUT_DIR (the test's artifact).

Usage: python tests/browser/check_html.py DIMGUARD_BINARY OUT_DIR
Exits non-zero when any check fails, or when Chromium or Playwright is missing: a missing browser
is a failure, never a skip. Prints `N passed, N failed`.
"""

import json
import os
import subprocess
import sys

CHROMIUM = os.environ.get("DIMGUARD_CHROMIUM", "/usr/bin/chromium")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACES = os.path.join(ROOT, "tests", "data", "traces")
LIMIT = 1_000_000
# A page with a joint answer: at most ten screens of 1000 px.
SCREEN = 1000
MAX_SCREENS = 10

# (name, dimguard arguments before --html/--json[, standard input])
REPORTS = [
    ("fpn_nonstrict", ["diagnose", os.path.join(TRACES, "fpn_nonstrict.log")]),
    ("fpn_strict", ["diagnose", os.path.join(TRACES, "fpn_strict.log")]),
    ("broadcast", ["diagnose", os.path.join(TRACES, "broadcast.log")]),
    ("ceil_pool", ["diagnose", os.path.join(TRACES, "ceil_pool.log")]),
    ("view_strict", ["diagnose", os.path.join(TRACES, "view_strict.log")]),
    ("linked", ["diagnose", os.path.join(TRACES, "linked.log")]),
    ("related", ["diagnose", os.path.join(TRACES, "related.log")]),
    ("raft_message", ["diagnose", os.path.join(ROOT, "tests", "data", "messages", "seed_raft_sympy_syntax.txt")]),
    ("check_raft", ["check", os.path.join(ROOT, "tests", "data", "pt2", "raft_small_torchfix.model.json")]),
    ("check_unetish", ["check", os.path.join(ROOT, "tests", "data", "pt2", "unetish_exact.model.json")]),
    # The largest page of any fixture (checked against the 1 MB limit).
    ("check_mobilenet_v3", ["check", os.path.join(ROOT, "tests", "data", "pt2", "mobilenet_v3_small_dims.model.json")]),
    ("captured_fpn", ["diagnose", os.path.join(TRACES, "captured_fpn.log")]),
    # Linked programs (torch 2.15): a torchvision Swin with 669 guards (the batch independent of
    # the linked (H, W)), and a relative-position model with five boxes.
    ("check_swin_t", ["check", os.path.join(ROOT, "tests", "data", "pt2", "swin_t_auto.pt2")]),
    ("check_relative_position", ["check", os.path.join(ROOT, "tests", "data", "pt2", "relative_position.model.json")]),
    # Dim.AUTO (unbounded): counts past 64 bits (the page was refused: "number out of range").
    ("check_two_stem_unbounded", ["check", os.path.join(ROOT, "tests", "data", "pt2", "two_stem_unbounded.pt2")]),
    # Other forms with provenance (TORCH_LOGS, draft_export).
    ("forms_fpn_log", ["diagnose", os.path.join(ROOT, "tests", "data", "forms", "fpn.log.txt")]),
    ("forms_window_attention_log", ["diagnose", os.path.join(ROOT, "tests", "data", "forms", "window_attention.log.txt")]),
    ("forms_fpn_draft", ["diagnose", os.path.join(ROOT, "tests", "data", "forms", "fpn.draft.txt")]),
    # verify: a real message and a spec (from standard input) that admits failing sizes.
    ("verify_raft", ["verify", os.path.join(ROOT, "tests", "data", "messages", "torch211_raft_small.txt"), "-"],
     "_dim_2 = Dim('_dim_2', min=17, max=270)\ndim_2 = 8*_dim_2\n"),
]


def expected_marks(report):
    """Accepted values per strip and tuples per 2-D plot, from the report's JSON."""
    strips = []
    for d in report.get("dims", []):
        # A linked size's strip marks the values that pass with some partner; a tied size's,
        # its partner's set through the tie.
        tied = (d.get("tied_to") or {}).get("accepted")
        sets = (d.get("with_some_partner"), tied, d.get("feasible"), d.get("accepted"))
        s = next((x for x in sets if isinstance(x, dict)), None)
        if isinstance(s, dict) and s.get("segments") is not None:
            # A range past 20000 values is drawn as bands (-1), whatever it accepts.
            r = d.get("range") or [d.get("claimed", {}).get("min"), d.get("claimed", {}).get("max")]
            wide = None not in r and r[1] - r[0] + 1 > 20000
            strips.append(-1 if wide else s["count"])
    pairs = []
    # Joint sets (groups of linked sizes): every accepted tuple, when every box is listed; with
    # three sizes or more, the panels of the first six values of the third size.
    # (`check` reports them as `joint`; `diagnose` and `verify` as `joint_sets`, their `joint`
    # being the guards over several sizes.)
    for j in (report.get("joint", []) or []) + (report.get("joint_sets", []) or []):
        if not isinstance(j, dict) or not j.get("boxes_complete") or len(j.get("dims", [])) < 2:
            continue
        # No box (nothing accepted, or nothing decided), or a part undecided: no plot.
        if not j["boxes"] or j.get("undecided") or any(side["count"] > 20000 for b in j["boxes"] for side in b):
            continue
        sides = [[values(side) for side in b] for b in j["boxes"]]
        n = len(j["dims"])
        # A size whose side is the same in every box is independent of the others: the page
        # draws the tuples of the others once (keeping at least two sizes).
        free = [all(b[k] == sides[0][k] for b in sides) for k in range(n)]
        keep = [k for k in range(n) if not free[k]]
        keep = sorted(keep + [k for k in range(n) if free[k]][: max(0, 2 - len(keep))])
        tuples = set()
        for b in sides:
            part = [()]
            for k in keep:
                part = [t + (v,) for t in part for v in b[k]]
            tuples.update(part)
        if len(tuples) > 20000:
            continue
        if len(keep) == 2:
            pairs.append(len(tuples))
        else:
            for c in sorted({t[2] for t in tuples})[:6]:
                pairs.append(sum(1 for t in tuples if t[2] == c))
    # Groups of a root and members derived from it: one tuple per accepted root value.
    for g in report.get("linked", []) or []:
        if isinstance(g.get("feasible"), dict) and g.get("members"):
            pairs.append(g["feasible"]["count"])
    return strips, pairs


def values(side):
    """The values of a `feasible`-form set."""
    return [x for s in side["segments"] for x in range(s["lo"], s["hi"] + 1) if x % s["modulus"] in s["residues"]]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    failures = []
    passed = 0
    if not os.path.exists(CHROMIUM):
        print(f"FAIL: no Chromium at {CHROMIUM} (apt-get install chromium)")
        print("0 passed, 1 failed")
        sys.exit(1)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        print(f"FAIL: Playwright for Python is not installed ({e}); pip install playwright")
        print("0 passed, 1 failed")
        sys.exit(1)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-gpu",
            ],
        )
        for name, args, *stdin in REPORTS:
            html = os.path.join(out_dir, name + ".html")
            res = subprocess.run(
                [binary] + args + ["--json", "--html", html],
                capture_output=True, text=True, timeout=600, input=stdin[0] if stdin else None,
            )
            if res.returncode != 0:
                failures.append(f"{name}: dimguard failed: {res.stderr.strip()}")
                continue
            report = json.loads(res.stdout)
            strips, pairs = expected_marks(report)
            problems = []
            size = os.path.getsize(html)
            if size >= LIMIT:
                problems.append(f"page is {size} bytes (limit {LIMIT})")
            ctx = browser.new_context(viewport={"width": 1100, "height": 900})
            ctx.grant_permissions(["clipboard-read", "clipboard-write"])
            page = ctx.new_page()
            errors, requests = [], []
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            page.on("pageerror", lambda e: errors.append(str(e)))

            def refuse(route):
                if not route.request.url.startswith("file://"):
                    requests.append(route.request.url)
                    return route.abort()
                return route.continue_()

            page.route("**/*", refuse)
            page.goto("file://" + os.path.abspath(html))
            page.wait_for_load_state("load")
            got_strips = page.eval_on_selector_all(
                "svg.strip", "els => els.map(e => e.dataset.aggregated ? -1 : e.querySelectorAll('rect.acc').length)"
            )
            declared = page.eval_on_selector_all("svg.strip", "els => els.map(e => +e.dataset.marks)")
            want = [c if c <= 20000 else -1 for c in strips]
            if got_strips != want:
                problems.append(f"strip marks {got_strips}, the report accepts {strips}")
            if [d for d, g in zip(declared, got_strips) if g >= 0] != [g for g in got_strips if g >= 0]:
                problems.append(f"data-marks {declared} disagree with the drawn marks {got_strips}")
            got_pairs = page.eval_on_selector_all(
                "svg.pairs", "els => els.map(e => e.querySelectorAll('circle.tup').length)"
            )
            if got_pairs != pairs:
                problems.append(f"2-D plot marks {got_pairs}, the report has tuples {pairs}")
            unlabeled = page.eval_on_selector_all(
                "svg", "els => els.filter(e => e.getAttribute('role') !== 'img' || !e.getAttribute('aria-label')).length"
            )
            if unlabeled:
                problems.append(f"{unlabeled} plot(s) without role=img and aria-label")
            if page.query_selector("#copy"):
                # Keyboard only: tab until the button has focus, press Enter.
                for _ in range(200):
                    page.keyboard.press("Tab")
                    if page.evaluate("document.activeElement && document.activeElement.id") == "copy":
                        break
                else:
                    problems.append("the copy button is not reachable with Tab")
                page.keyboard.press("Enter")
                page.wait_for_function("document.getElementById('copied').textContent.length > 0", timeout=5000)
                said = page.inner_text("#copied")
                if said != "Copied.":
                    problems.append(f"copy button said {said!r}")
                else:
                    clip = page.evaluate("navigator.clipboard.readText()")
                    if clip.strip() != report["dynamic_shapes"].strip():
                        problems.append("the clipboard does not hold the spec")
            shot = os.path.join(out_dir, name + ".png")
            page.screenshot(path=shot, full_page=True)
            joint = [j for j in (report.get("joint", []) or []) + (report.get("joint_sets", []) or [])
                     if isinstance(j, dict) and "boxes" in j]
            if joint:
                # The screenshot's own height (PNG header), and the joint answer first.
                with open(shot, "rb") as f:
                    height = int.from_bytes(f.read(24)[20:24], "big")
                if height > MAX_SCREENS * SCREEN:
                    problems.append(f"the page is {height} px tall (limit {MAX_SCREENS} screens of {SCREEN} px)")
                first = page.eval_on_selector("main section h2", "e => e.id")
                if first != "h-joint":
                    problems.append(f"the page opens with {first}, not the joint answer")
                j_sum = joint[0].get("summary", "")
                if j_sum not in page.inner_text("section[aria-labelledby=h-joint]"):
                    problems.append("the joint answer's sentence is not in its section")
                print(f"   {name}: {height} px tall")
            if errors:
                problems.append(f"console errors: {errors}")
            if requests:
                problems.append(f"network requests: {requests}")
            ctx.close()
            if problems:
                failures.append(f"{name}: " + "; ".join(problems))
            else:
                passed += 1
                print(f"ok {name}: {size} bytes, strips {got_strips}, pairs {got_pairs}")
        browser.close()
    for f in failures:
        print("FAIL", f)
    print(f"{passed} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
