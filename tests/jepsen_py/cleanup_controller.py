"""A controller that provisions three containers, partitions them and waits to be killed.

tests/jepsen_py/test_cleanup.py starts it as a subprocess and SIGKILLs it mid-test, the way a crashed
or kill -9'd `jepsen-py run` would leave things, then checks that `jepsen-py cleanup` removes it all.
"""

import json
import logging
import random
import sys
import time
from pathlib import Path

from jepsen_py.nemeses.partition import PartitionNemesis

from jepsen_py.backends.docker import DockerBackend
from jepsen_py.history import Op
from jepsen_py.protocols import Test, TestSpec

spec = TestSpec(name="cleanup-victim", workload="none", nemesis=["partition-random"],
                nodes=["n1", "n2", "n3"], time_limit=60, concurrency=1, rate=0, nemesis_interval=1,
                seed=1, backend="docker",
                read_mode="read-index", bugs=[], db="", results_dir=Path("/tmp"),
                options={"docker_image": sys.argv[1]})
test = Test(spec=spec, store_dir=Path("/tmp"), log=logging.getLogger("victim"), rng=random.Random(1))
backend = DockerBackend(spec)
test.backend = backend
test.remotes = backend.setup(test)
for n in spec.nodes:
    test.remotes[n].start_daemon(["sleep", "600"], pidfile="/run/victim.pid", logfile="/tmp/victim.log")
start = Op(0, 0, "invoke", "nemesis", "start-partition", value="random")
done = PartitionNemesis(["random"]).invoke(test, start)
print(json.dumps({"run": backend.run_id, "network": backend.network.name, "grudge": done.value["grudge"]}),
      flush=True)
time.sleep(600)
