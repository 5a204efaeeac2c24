"""The conversation headings say exactly what the context holds: which turns are summarised, how
much of the summary is shown, and which turns are shown verbatim (and which the budget left out)."""

from __future__ import annotations

from collections.abc import Sequence

from connector.context.budget import Chosen
from connector.context.labels import counted
from connector.llm import NON_LLM_LABEL
from connector.working.models import SessionState


def _span(first: int, last: int) -> str:
    return f"turn {first}" if first == last else f"turns {first}-{last}"


def summary_heading(state: SessionState | None, chosen: Sequence[Chosen], lines: int) -> str:
    """`` (non-LLM mode (deterministic); turns 1-280 summarised; 9 of 14 lines shown)``."""
    if state is None or not state.summary:
        return ""
    mode = NON_LLM_LABEL if state.summary_mode == "non-llm" else "LLM summary"
    text = f" ({mode}; {_span(1, state.summary_upto_seq)} summarised"
    cut = any(ch.truncated for ch in chosen)
    if state.summary_mode == "non-llm" and lines:
        shown = len(chosen)
        if shown == lines and not cut:
            text += "; its line shown" if lines == 1 else f"; all {lines} lines shown"
        else:
            text += f"; {shown} of {counted(lines, 'line')} shown"
    elif cut:
        text += "; cut to fit"
    if cut and state.summary_mode == "non-llm":
        text += ", the last one cut to fit"
    return text + ")"


def turns_heading(state: SessionState | None, chosen: Sequence[Chosen]) -> str:
    """`` (turns 281-300)``, or `` (turns 290-300 shown; turns 281-289 left out for budget)``."""
    if state is None or not state.turns:
        return ""
    first, last = state.turns[0].seq, state.turns[-1].seq
    seqs = sorted(int(ch.candidate.source.rsplit("#", 1)[1]) for ch in chosen)
    if not seqs:
        return f" ({_span(first, last)} left out for budget)"
    if seqs[0] == first:
        return f" ({_span(first, last)})"
    return f" ({_span(seqs[0], last)} shown; {_span(first, seqs[0] - 1)} left out for budget)"
