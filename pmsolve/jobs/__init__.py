"""Applications that combine the rooms below them: :mod:`.host` is the main job (measure this CPU,
infer its explained port mapping, compare with llvm-mca and OSACA on held-out experiments)."""
