"""The TypeScript client (clients/typescript) against a real hub: this test builds it (buf generate + tsc, after
`npm ci` when node_modules is missing or stale) and runs its tests under node's test runner, handing them the
session hub's address and two agents' tokens."""

from __future__ import annotations

import os
import re
import subprocess

from conftest import Stack
from node_support import PACKAGE, built_client


def test_the_typescript_client_passes_its_tests_against_a_real_hub(stacks: dict[str, Stack], ns: str) -> None:
    hub = stacks["external-pg"]
    built_client()
    env = {
        **os.environ,
        "MEMHUB_TEST_ADDRESS": hub.address,
        "MEMHUB_TEST_TOKEN": hub.token("ts-agent"),
        "MEMHUB_TEST_OTHER_TOKEN": hub.token("ts-outsider", groups=()),
        "MEMHUB_TEST_NAMESPACE": ns,
    }
    proc = subprocess.run(
        ["node", "--test", "--test-reporter=tap", "dist/test/"], cwd=PACKAGE, capture_output=True, text=True, timeout=300, env=env
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    passed = re.search(r"^# pass (\d+)$", out, re.M)
    failed = re.search(r"^# fail (\d+)$", out, re.M)
    assert passed and failed, out
    assert int(passed.group(1)) == 6 and int(failed.group(1)) == 0, out
