"""The deterministic simulator: the real node code of cluster/ for every node in one process, one
thread, one seeded random source, in virtual time (`jepsen-py run --backend sim`).

The engine (loop, network, disk, clock, cluster) runs the nodes; the run driver (run, interpreter,
client, nemesis, observer) drives a test against them and writes the same results directory as the
Docker backend. A node stuck in an endless loop would hold the one thread every node shares: the
watchdog stops it as a liveness probe would, and the run goes on with that node crashed.
"""
