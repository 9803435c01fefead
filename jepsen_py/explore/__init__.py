"""Searching for bugs without being told where they are (`jepsen-py explore`).

  space     the configurations a search may try (workloads, fault families and targets, intervals,
            schedule shapes, read modes, node counts), with no knowledge of any particular bug
  schedule  a run written down as data: every client and nemesis op with its offset in the main
            phase; saved as JSON, loaded back, replayed (`jepsen-py run --schedule FILE`)
  replay    generators that emit a schedule's ops at their offsets
  coverage  what a run reached (fault kinds and overlaps, Raft terms, leader changes, recoveries,
            lease reads): the search prefers configurations that reached something new
  search    random search, then coverage-guided mutation, until a finding or the budget ends
  shrink    a failing schedule reduced to a small one that fails with the same anomaly kind
  system    the system a search runs trials against, on any backend (its BackendKind says how)
  plan      the search a command line asks for (backend, DB, bugs, space), checked before anything runs
  finding   a failing trial shrunk, hardened and written down (finding-N/, FindingReport)
  driver    what the driver of a search fanned out over other cores does with each trial and finding
"""
