"""The named fusion profiles of each recall: which rules rank ERP cases, which rank dialogue turns.

Case recall and turn recall share one fusion (:mod:`connector.recall.fusion`), but not all of its
rules fit both. The speaker hedge (and its yes/no exception) was made for dialogue, where half the
turns start with a speaker's name; it must not decide an ERP case's rank because of a customer name
that half the cases happen to share. So each recall has its own table of profiles, a default among
them, and a caller picks one per call by name (or passes a :class:`Fusion` of their own):

- turns: ``dialogue`` (default: hedge, yes/no form, lexical weight growing with the turns' length
  and as the history shrinks),
  ``plain`` (the hybrid without the hedge), ``lexical`` (BM25 alone), ``dense`` (the embedding alone);
- cases: ``case`` (default: the hybrid with value and document rules, no dialogue rules),
  ``dialogue`` (for dialogue turns recorded as cases: the hedge on), ``lexical``, ``dense``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from connector.recall.fusion_options import Fusion

TURN_PROFILES: Mapping[str, Fusion] = MappingProxyType(
    {
        # the lexical weight grows with the turns' length (long assistant answers blur in the
        # embedder's window) and as the history shrinks (few candidates: noisy dense z-scores). On
        # the public dev split (110 questions) recall@5 / @10 0.745 / 0.873 -> 0.800 / 0.918 on ~490
        # turns (BM25 0.791 / 0.873); the chats as past conversations unchanged (0.800 -> 0.805 @5)
        "dialogue": Fusion(small_scope_weight=0.7, long_text_weight=0.6),
        "plain": Fusion(hedge=False, small_scope_weight=0.7, long_text_weight=0.6),
        "lexical": Fusion(method="lexical"),
        "dense": Fusion(method="dense"),
    }
)
DEFAULT_TURN_PROFILE = "dialogue"

CASE_PROFILES: Mapping[str, Fusion] = MappingProxyType(
    {
        # the hybrid calibrated on the ERP sets: value weight and bonus, centring; no speaker hedge
        "case": Fusion(hedge=False),
        # dialogue turns recorded as cases (one case per turn): the hybrid with the speaker hedge and
        # yes/no form, case recall's default before the profiles (the business dialogues recorded
        # as cases: recall@5 0.884 with it, 0.833 without; the ERP set the same either way)
        "dialogue": Fusion(),
        "lexical": Fusion(method="lexical"),
        "dense": Fusion(method="dense"),
    }
)
DEFAULT_CASE_PROFILE = "case"


def check_profile(profile: object, profiles: Mapping[str, Fusion]) -> str | None:
    """None when ``profile`` names one of ``profiles``, is a :class:`Fusion` or is None; else the
    one-line reason, for the caller's own error type."""
    if profile is None or isinstance(profile, Fusion) or (isinstance(profile, str) and profile in profiles):
        return None
    return f"profile must be one of {sorted(profiles)} or a Fusion, got {profile!r}"


def resolve(profile: str | Fusion | None, profiles: Mapping[str, Fusion], default: Fusion) -> Fusion:
    """The fusion a call uses: its own, the named one, or the part's ``default``."""
    if profile is None:
        return default
    return profile if isinstance(profile, Fusion) else profiles[profile]
