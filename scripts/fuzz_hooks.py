"""schemathesis hooks for scripts/fuzz.sh (loaded with SCHEMATHESIS_HOOKS=fuzz_hooks).

For the run with another workspace's token: path ids are sometimes swapped
for ids of the seeded workspace, and the check `no_cross_workspace_read`
fails any answer that carries the seeded workspace's canary (a string in
its missions, agents and messages). With FUZZ_CANARY unset both do nothing.
"""

import os
import random

import schemathesis

CANARY = os.environ.get("FUZZ_CANARY", "")
# "name=value,name=value": path parameters to aim at the other workspace.
FOREIGN = [
    tuple(pair.split("=", 1))
    for pair in os.environ.get("FUZZ_FOREIGN_IDS", "").split(",")
    if "=" in pair
]


@schemathesis.hook
def map_path_parameters(context, path_parameters):
    if not FOREIGN or not path_parameters:
        return path_parameters
    for name, value in FOREIGN:
        if name in path_parameters and random.random() < 0.5:
            path_parameters[name] = value
    return path_parameters


@schemathesis.check
def no_cross_workspace_read(ctx, response, case):
    # An id the request itself carries may be echoed ("no agent 'cnry…'").
    sent = " ".join(
        str(part) for part in (case.path_parameters, case.query, case.headers, case.body)
    )
    if CANARY and CANARY in response.text and CANARY not in sent:
        raise AssertionError(
            "the answer carries data of another workspace (its canary "
            f"{CANARY!r}): {response.status_code} {response.text[:300]}"
        )
