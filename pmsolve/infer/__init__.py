"""Port-mapping inference algorithms: PMEvo (ch. 5) in :mod:`pmsolve.infer.pmevo`."""
