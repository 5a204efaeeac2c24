"""Render sections into the context text with the template in ``prompts/context.md``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from string import Template

from connector.context.quote import one_line
from connector.errors import ConfigError
from connector.resources import prompt_text

TEMPLATE_FILE = "context.md"
EMPTY = "(none)"


@lru_cache(maxsize=4)
def context_template(name: str = TEMPLATE_FILE) -> Template:
    template = Template(prompt_text(name))
    wanted = {"party_kind", "customer_id", "tenant", "warnings", "erp_as_of", "summary_label", "turns_label"}
    missing = wanted - set(template.get_identifiers())
    if missing:
        raise ConfigError(
            f"prompts/{name} lacks placeholders {', '.join(sorted(missing))}: restore the shipped template"
        )
    return template


def warnings_block(warnings: Sequence[str]) -> str:
    if not warnings:
        return ""
    return "\n## Warnings\n" + "\n".join(f"- {one_line(w, 400)}" for w in warnings) + "\n"


EARLIER_CONVERSATIONS = "From earlier conversations"
ERP_CHANGES = "Recent ERP changes"


def render(
    *,
    party_kind: str,
    customer_id: str,
    tenant: str,
    erp_as_of: str,
    summary_label: str,
    turns_label: str,
    warnings: Sequence[str],
    bodies: Mapping[str, str],
) -> str:
    """The whole context; a section without items reads ``(none)``, except earlier conversations
    and recent ERP changes, which are shown only when they have items (a context without them
    reads as before)."""
    values = {name: (body if body else EMPTY) for name, body in bodies.items()}
    earlier = bodies.get("earlier_conversations", "")
    values["earlier_conversations"] = f"\n\n## {EARLIER_CONVERSATIONS}\n{earlier}" if earlier else ""
    changes = bodies.get("erp_changes", "")
    values["erp_changes"] = f"\n\n## {ERP_CHANGES}\n{changes}" if changes else ""
    values.update(
        party_kind=party_kind,
        customer_id=one_line(customer_id, 128),
        tenant=one_line(tenant, 64),
        erp_as_of=erp_as_of,
        summary_label=summary_label,
        turns_label=turns_label,
        warnings=warnings_block(warnings),
    )
    return context_template().substitute(values).rstrip("\n") + "\n"
