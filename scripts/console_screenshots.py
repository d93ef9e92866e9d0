"""Screenshots of the web console's main pages, from a freshly seeded hub, for the README.

    .venv/bin/python scripts/console_screenshots.py [--out docs/console]

Starts a hub on an embedded Postgres and Milvus Lite in a temporary data directory with the shipped
policies (default + examples/fleet), writes a small support team's memories through the gRPC API
(a superseded fact, a forgotten one, a text with <script> in it), lets an outsider's write be denied,
runs a search and a policy check, then signs in to the console as an admin in headless Chromium and
saves one PNG per page (1280x800, a laptop's screen). Run it again after changing a page: the pictures
come from the real console, so they stay true.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # browser_support: Chromium from Debian's packages, as the tests use it

import grpc  # noqa: E402

from memhub.api.server import build_server  # noqa: E402
from memhub.app import Hub  # noqa: E402
from memhub.auth import issue_token, load_secret  # noqa: E402
from memhub.client import MemhubClient, memory_input  # noqa: E402
from memhub.config import HubConfig, PolicyConfig, ServerConfig, StoreConfig  # noqa: E402
from memhub.console.config import ConsoleConfig  # noqa: E402
from memhub.console.server import ConsoleServer  # noqa: E402
from memhub.db import embedded_pg  # noqa: E402
from memhub.v1 import admin_pb2 as apb  # noqa: E402

# The operator administers the hub (admins) and may read every namespace but change none (the fleet
# example's auditors): the console shows only what its token may see.
GROUPS = {"alice": ["support"], "dave": ["support", "support-leads"], "eve": [], "root": ["admins", "auditors"]}
WIDTH, HEIGHT = 1280, 800


def seed(address: str, secret: bytes) -> dict[str, str]:
    """Memories, a denial and a search, all through the API; returns ids the pages link to."""

    def client(agent: str) -> MemhubClient:
        return MemhubClient(
            address, token=issue_token(secret, agent_id=agent, groups=GROUPS[agent], ttl=timedelta(hours=1)).token
        )

    with client("alice") as alice, client("dave") as dave, client("eve") as eve, client("root") as root:
        tickets = "teams/support/tickets"
        alice.write(
            [
                memory_input(
                    tickets,
                    "Ticket 4312: the EU cache ran out of memory at 02:10; restarting it fixed logins",
                    type="outcome",
                    tags=["incident", "cache"],
                    entities=["ERR-4312"],
                ),
                memory_input(
                    tickets,
                    "Customer Globex reports slow exports on the reporting page since Monday",
                    type="event",
                    tags=["globex"],
                ),
                memory_input(
                    tickets,
                    "Customer pasted <script>alert('hi')</script> into the contact form; it is shown here as text",
                    type="note",
                    tags=["security"],
                ),
            ],
            session_id="support-shift-2026-12-01",
            wait_indexed=True,
        )
        runbooks = "teams/support/runbooks"
        dave.write(
            [
                memory_input(
                    runbooks, "Restart the cache before failing over the EU region", type="rule", kind="procedural", importance=5
                )
            ],
            wait_indexed=True,
        )
        dave.write(
            [
                memory_input(
                    runbooks,
                    "Escalations go to Priya (on call until Friday)",
                    type="fact",
                    subject_key="support/escalation-contact",
                )
            ],
            wait_indexed=True,
        )
        current = (
            dave.write(
                [
                    memory_input(
                        runbooks,
                        "Escalations go to Marco from Saturday; Priya is off",
                        type="fact",
                        subject_key="support/escalation-contact",
                    )
                ],
                wait_indexed=True,
            )
            .results[0]
            .memory.id
        )
        stale = dave.write([memory_input(runbooks, "The old VPN endpoint is vpn1.example.net", type="fact")]).results[0].memory.id
        dave.forget(ids=[stale], reason="vpn1 was decommissioned")
        alice.write(
            [memory_input("agents/alice/prefs", "Alice prefers short answers with links to the runbook", type="preference")]
        )
        try:
            eve.write([memory_input("teams/support/tickets", "eve was here")])
        except grpc.RpcError:
            pass  # denied: the audit page shows it
        alice.search("why did logins fail? cache out of memory", [], explain=True)
        alice.search("who handles escalations this weekend", [])
        root.call_admin("CheckAccess", apb.CheckAccessRequest(agent_id="eve", action="write", namespace="teams/support/tickets"))
    return {"current": current}


def shoot(console_url: str, token: str, ids: dict[str, str], out: Path) -> list[Path]:
    from browser_support import ensure_chromium, new_driver, quit_driver, submit_and_wait
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    problem = ensure_chromium()
    if problem:
        raise SystemExit(f"console_screenshots: cannot run Chromium: {problem}")
    driver = new_driver(WIDTH, HEIGHT)
    saved = []
    try:
        driver.get(console_url + "/signin")
        driver.find_element(By.ID, "token").send_keys(token)
        submit_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/signin'] button"), "/namespaces")
        # Signed-in pages live under the session's prefix /s/<page key> (memhub/console/binding.py).
        pages_url = driver.current_url.removesuffix("/namespaces")
        pages = [
            ("namespaces", "/namespaces"),
            ("memories", "/memories?ns=teams/support"),
            ("memory", f"/memory/{ids['current']}"),
            ("search", "/search?q=why+did+logins+fail%3F&explain=on"),
            ("audit", "/audit?decision=deny"),
            ("health", "/health"),
            ("retrieval", "/retrieval"),
        ]
        for name, path in pages:
            driver.get(pages_url + path)
            saved.append(_save(driver, out / f"{name}.png"))
        driver.get(pages_url + "/policies")
        driver.find_element(By.ID, "agent").send_keys("eve")
        driver.find_element(By.ID, "check-ns").send_keys("teams/support/tickets")
        Select(driver.find_element(By.ID, "check-action")).select_by_visible_text("write")
        submit_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "form[action$='/policies/check'] button"), "/policies/check")
        saved.append(_save(driver, out / "policies.png"))
    finally:
        quit_driver(driver)
    return saved


def _save(driver, path: Path) -> Path:  # noqa: ANN001
    """The page as a PNG, made small when Debian's pngquant (256 colours: plenty for text on flat colours)
    and optipng (lossless) are installed: apt-get install pngquant optipng."""
    driver.save_screenshot(str(path))
    if shutil.which("pngquant"):
        subprocess.run(
            ["pngquant", "--force", "--skip-if-larger", "--quality", "80-98", "--output", str(path), str(path)], check=False
        )
    if shutil.which("optipng"):
        subprocess.run(["optipng", "-quiet", "-o2", str(path)], check=False)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "console", help="where the PNGs go")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memhub-screens-") as tmp:
        root = Path(tmp)
        data = root / "data"
        data.mkdir(mode=0o700)
        policies = root / "policies"
        shutil.copytree(REPO / "policies", policies)
        config = HubConfig(
            store=StoreConfig(data_dir=data),
            server=ServerConfig(port=0),
            policy=PolicyConfig(dir=policies, files=("default.cedar", "examples/fleet.cedar")),
        )
        started = time.monotonic()
        hub = Hub.open(config)
        server, port, _ = build_server(hub)
        server.start()
        hub.start_background()
        console = None
        try:
            address = f"127.0.0.1:{port}"
            secret = load_secret(hub.config.auth.hs256_secret_file)
            ids = seed(address, secret)
            console = ConsoleServer(ConsoleConfig(hub_address=address))
            console.start()
            token = issue_token(secret, agent_id="root", groups=GROUPS["root"], ttl=timedelta(hours=1)).token
            saved = shoot(console.url, token, ids, args.out)
        finally:
            if console is not None:
                console.stop()
            server.stop(grace=None)
            hub.close()
            embedded_pg.release(data)  # before the temporary directory goes
    for path in saved:
        print(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}: {path.stat().st_size // 1024} KiB")
    print(f"console_screenshots: {len(saved)} pages in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
