"""Port-mapping inference: CEGIS (ch. 4) in :mod:`pmsolve.infer.cegis`, PMEvo (ch. 5) in
:mod:`pmsolve.infer.pmevo`, the explainable inference (ch. 6) in :mod:`pmsolve.infer.explain`.

All three share one signature, ``infer(oracle, options, *, state=None, progress=None)``:
the options dataclass holds every knob (ports and instructions included), ``state`` is a
fingerprinted state file (PMEvo: a folder) a rerun resumes, ``progress`` receives
:class:`~pmsolve.infer.progress.ProgressEvent`\\ s. CEGIS and PMEvo results carry the check on
unseen experiments (:mod:`pmsolve.infer.common`); the explainable inference checks every scheme
on experiments not used to derive it.
"""
