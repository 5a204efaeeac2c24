"""The scope of a learned fact: tenant and customer, plus optional agent and workflow ids.

A fact learned in one agent's or workflow's scope is visible only in exactly that scope; a missing
part matches only a missing part (NULL IS NOT DISTINCT FROM NULL). ``key`` turns the four parts into
one indexable string in which None cannot collide with any id.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from connector.scope import Scope, require_id


@dataclass(frozen=True, slots=True)
class FactScope:
    tenant: str
    customer_id: str
    agent_id: str | None = None
    workflow_id: str | None = None

    @classmethod
    def of(
        cls, tenant: object, customer_id: object, agent_id: object = None, workflow_id: object = None
    ) -> FactScope:
        """Validate every part (fails closed on blank ids); None agent/workflow means "none"."""
        base = Scope.of(tenant, customer_id)
        return cls(
            tenant=base.tenant,
            customer_id=base.customer_id,
            agent_id=None if agent_id is None else require_id(agent_id, "agent_id"),
            workflow_id=None if workflow_id is None else require_id(workflow_id, "workflow_id"),
        )

    @property
    def key(self) -> str:
        parts = [self.tenant, self.customer_id, self.agent_id, self.workflow_id]
        return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()
