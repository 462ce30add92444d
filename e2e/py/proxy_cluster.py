#!/usr/bin/env python3
"""redis-py's RedisCluster pointed at a shardgate proxy.

Usage: proxy_cluster.py PROXY_HOST:PORT

The proxy presents itself as a one-master cluster owning every slot, so
RedisCluster must discover it (CLUSTER SLOTS, COMMAND) and then serve keys
in every slot, pipelines, hash-tagged multi-key commands and the
non-atomic MGET/MSET helpers that split by slot client-side. Prints each
check and exits 1 on the first failure. Used by e2e/proxy_test.go
(TestProxyRedisPyCluster).
"""
import sys

from redis.cluster import RedisCluster


def check(label, got, want):
    if got != want:
        print(f"FAIL {label}: got {got!r}, want {want!r}")
        sys.exit(1)
    print(f"ok   {label}")


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    rc = RedisCluster(host=host, port=int(port), decode_responses=True, socket_timeout=10)
    nodes = rc.get_nodes()
    check("one master", [(n.host, n.port, n.server_type) for n in nodes], [(host, int(port), "primary")])
    check("flushall", rc.flushall(), True)
    n = 500
    for i in range(n):
        rc.set(f"py:{i}", i)
    check("get every slot", [rc.get(f"py:{i}") for i in range(n)], [str(i) for i in range(n)])
    check("dbsize", rc.dbsize(), n)
    check("keyslot", rc.cluster_keyslot("py:1"), rc.keyslot("py:1"))

    pipe = rc.pipeline()
    for i in range(n):
        pipe.incr(f"pyc:{i}")
    check("pipeline", pipe.execute(), [1] * n)

    check("mset tag", rc.mset({"{py}a": "1", "{py}b": "2"}), True)
    check("mget tag", rc.mget("{py}a", "{py}b", "{py}c"), ["1", "2", None])
    check("mset_nonatomic", rc.mset_nonatomic({"x1": "a", "x2": "b", "x3": "c"}), [True, True, True])
    check("mget_nonatomic", rc.mget_nonatomic("x1", "x2", "nope", "x3"), ["a", "b", None, "c"])
    check("delete across slots", rc.delete("x1", "x2", "nope"), 2)
    info = rc.cluster_info()
    check("cluster_info state", info.get("cluster_state"), "ok")
    check("cluster_info slots", int(info.get("cluster_slots_assigned")), 16384)
    check("scan_iter", len(list(rc.scan_iter(match="py:*", count=100))), n)
    rc.close()
    print("redis-py RedisCluster through the proxy: all checks passed")


if __name__ == "__main__":
    main()
