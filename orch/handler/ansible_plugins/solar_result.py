# solar_result: an Ansible callback plugin shipped with solar. solar puts
# it on ANSIBLE_CALLBACK_PLUGINS for every playbook it runs and enables it;
# at the end of the run it writes, to the file $SOLAR_RESULT names, what
# solar needs to know: whether any task changed something, the data of
# set_stats as outputs, and the first failed task or unreachable host.
# Module arguments, which may carry secrets, are never written.
from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: solar_result
    type: aggregate
    short_description: writes the result of a playbook run for solar
    description:
      - Writes changed, outputs (set_stats data) and the first failure to $SOLAR_RESULT.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "solar_result"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.changed = False
        self.failed = None
        self.unreachable = None

    def v2_runner_on_ok(self, result):
        if result._result.get("changed", False):
            self.changed = True

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if ignore_errors or self.failed is not None:
            return
        res = result._result
        msg = res.get("msg") or res.get("stderr") or res.get("module_stderr") or ""
        self.failed = {"task": result._task.get_name(), "msg": str(msg).strip()}

    def v2_runner_on_unreachable(self, result):
        if self.unreachable is None:
            self.unreachable = {
                "host": result._host.get_name(),
                "msg": str(result._result.get("msg", "")).strip(),
            }

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("SOLAR_RESULT")
        if not path:
            return
        outputs = {}
        custom = getattr(stats, "custom", None) or {}
        for host, data in custom.items():
            if isinstance(data, dict):
                outputs.update(data)
        doc = {"changed": self.changed, "outputs": outputs}
        if self.failed is not None:
            doc["failed"] = self.failed
        if self.unreachable is not None:
            doc["unreachable"] = self.unreachable
        with open(path, "w") as f:
            json.dump(doc, f, default=str)
