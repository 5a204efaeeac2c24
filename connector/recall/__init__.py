"""The recall machinery case recall (:mod:`connector.episodic`) and turn recall
(:mod:`connector.conversations`) share: the fusion of BM25 and dense scores and its named profiles,
the scoped ranking, the dense threshold, the question's form and time, vectors and their cache, and
the retention windows. Each recall keeps only what it shows (a case, a turn with neighbours)."""
