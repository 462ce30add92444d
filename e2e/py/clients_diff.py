#!/usr/bin/env python3
"""Typical redis-py usage against a shardgate node and a redis-server.

Usage: clients_diff.py NODE_HOST:PORT REDIS_HOST:PORT

Runs the same scenario on both (RESP2: redis-py 4.x has no RESP3), prints
every line that differs and exits 1 if any does. Results that differ by
nature (client ids, timings, server memory) are left out or reduced to a
type. Used by e2e/clients_test.go (TestRedisPyLikeRedis).
"""
import sys
import threading

import redis


def scenario(host, port):
    out = []
    r = redis.Redis(host=host, port=port, decode_responses=True, socket_timeout=10)
    rb = redis.Redis(host=host, port=port, socket_timeout=10)

    def p(label, f):
        try:
            v = f()
            out.append(f"{label}: {type(v).__name__} {v!r}")
        except Exception as e:  # the error class and text are compared too
            out.append(f"{label}: EXC {type(e).__name__} {e}")

    p("flushall", r.flushall)
    p("ping", r.ping)
    p("set ex", lambda: r.set("k", "v", ex=100))
    p("set nx", lambda: r.set("k", "v", nx=True))
    p("set get", lambda: r.set("k", "w", get=True))
    p("get", lambda: r.get("k"))
    p("get missing", lambda: r.get("missing"))
    p("ttl", lambda: r.ttl("k"))
    p("ttl missing", lambda: r.ttl("missing"))
    p("incr", lambda: r.incr("c"))
    p("incrby", lambda: r.incrby("c", 41))
    p("incrbyfloat", lambda: r.incrbyfloat("f", 2.5))
    p("incr not integer", lambda: r.incr("k"))
    p("setex", lambda: r.setex("se", 50, "x"))
    p("psetex", lambda: r.psetex("pse", 50000, "x"))
    p("getex persist", lambda: r.getex("se", persist=True))
    p("getdel", lambda: r.getdel("pse"))
    p("append", lambda: r.append("s", "hello"))
    p("getrange", lambda: r.getrange("s", 1, 3))
    p("setrange", lambda: r.setrange("s", 10, "x"))
    p("strlen", lambda: r.strlen("s"))
    p("mset tags", lambda: r.mset({"{t}a": 1, "{t}b": 2}))
    p("mget tags", lambda: r.mget("{t}a", "{t}b", "{t}c"))
    p("msetnx", lambda: r.msetnx({"{t}a": 9, "{t}z": 1}))
    p("mset crossslot", lambda: r.mset({"a": 1, "b": 2}))
    p("mget crossslot", lambda: r.mget("a", "b"))
    p("keys", lambda: sorted(r.keys()))
    p("keys pattern", lambda: sorted(r.keys("{t}*")))
    p("scan_iter", lambda: sorted(r.scan_iter(match="{t}*", count=2)))
    p("scan_iter type", lambda: sorted(r.scan_iter(_type="string")))
    p("exists", lambda: r.exists("k", "k"))
    p("type", lambda: r.type("c"))
    p("expire", lambda: r.expire("c", 100))
    p("pexpire", lambda: r.pexpire("c", 100000))
    p("persist", lambda: r.persist("c"))
    p("expiretime missing", lambda: r.execute_command("EXPIRETIME", "missing"))
    p("rename", lambda: r.rename("{t}a", "{t}r"))
    p("rename crossslot", lambda: r.rename("{t}r", "other"))
    p("renamenx", lambda: r.renamenx("{t}r", "{t}b"))
    p("copy", lambda: r.copy("{t}r", "{t}copy"))
    p("object encoding", lambda: r.object("encoding", "c"))
    p("object encoding embstr", lambda: r.object("encoding", "k"))
    p("memory usage missing", lambda: r.memory_usage("missing"))
    p("dbsize", r.dbsize)
    p("unlink", lambda: r.unlink("s", "missing"))
    p("touch", lambda: r.touch("k"))
    p("info version and mode", lambda: (r.info()["redis_version"], r.info()["redis_mode"]))
    # avg_ttl is left out: Redis estimates it in its active expiry cycle,
    # every 100 ms, and keeps the last estimate once no key has a TTL, so
    # it depends on when that cycle last ran (CI saw 50000 against 0).
    p("info keyspace", lambda: {db: {k: v for k, v in f.items() if k != "avg_ttl"} for db, f in r.info("keyspace").items()})
    p("config get", lambda: r.config_get("maxclients"))
    p("client setname", lambda: r.client_setname("pyclient"))
    p("client getname", r.client_getname)
    p("client list names", lambda: [c["name"] for c in r.client_list()])
    p("client info fields", lambda: sorted(r.client_info().keys()))
    p("client kill missing", lambda: r.client_kill("1.2.3.4:5"))
    p("echo", lambda: r.echo("hi"))
    p("command getkeys", lambda: r.command_getkeys("MSET", "a", "1", "b", "2"))
    p("cluster keyslot", lambda: r.execute_command("CLUSTER", "KEYSLOT", "foo"))
    p("bitfield", lambda: r.bitfield("bf").incrby("u8", 0, 300).get("u8", 0).execute())
    p("setbit", lambda: r.setbit("bm", 7, 1))
    p("bitcount", lambda: r.bitcount("bm"))
    p("pfadd", lambda: r.pfadd("h", "a", "b"))
    p("pfcount", lambda: r.pfcount("h"))
    p("unknown command", lambda: r.execute_command("NOSUCHCOMMAND", "a"))
    p("wrong arity", lambda: r.execute_command("GET"))

    pipe = r.pipeline(transaction=False)
    for i in range(200):
        pipe.set(f"p{i}", i)
    pipe.get("p199").incr("k")
    p("pipeline", lambda: pipe.execute(raise_on_error=False)[-2:])
    pipe = r.pipeline()
    pipe.incr("{x}a").incr("{x}a").get("{x}a")
    p("transaction", pipe.execute)
    pipe = r.pipeline()
    pipe.incr("{x}a").incr("{y}a")
    p("transaction crossslot", pipe.execute)
    pipe = r.pipeline()
    pipe.set("{x}s", "abc").incr("{x}s").get("{x}s")
    p("transaction runtime error", lambda: pipe.execute(raise_on_error=False))

    def incr_watch():
        with r.pipeline() as pp:
            while True:
                try:
                    pp.watch("wc")
                    v = int(pp.get("wc") or 0)
                    pp.multi()
                    pp.set("wc", v + 1)
                    pp.execute()
                    return
                except redis.WatchError:
                    continue

    threads = [threading.Thread(target=lambda: [incr_watch() for _ in range(20)]) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    p("watch counter", lambda: r.get("wc"))

    def tx_fn(pp):
        v = int(pp.get("wc2") or 0)
        pp.multi()
        pp.set("wc2", v + 1)
    p("transaction helper", lambda: r.transaction(tx_fn, "wc2"))

    p("binary set", lambda: rb.set(b"bin\x00key", bytes(range(256))))
    p("binary get", lambda: rb.get(b"bin\x00key") == bytes(range(256)))
    p("select 0", lambda: rb.execute_command("SELECT", 0))
    p("db 1 client", redis.Redis(host=host, port=port, db=1, socket_timeout=10).ping)
    p("password without requirepass", redis.Redis(host=host, port=port, password="x", socket_timeout=10).ping)
    p("reset", lambda: r.execute_command("RESET"))
    p("flushdb async", lambda: r.flushdb(asynchronous=True))
    p("dbsize after flush", r.dbsize)
    return out


def main():
    results = []
    for addr in sys.argv[1:3]:
        host, port = addr.rsplit(":", 1)
        results.append(scenario(host, int(port)))
    node, ref = results
    diffs = 0
    for a, b in zip(node, ref):
        if a != b:
            diffs += 1
            print(f"DIFF\n  node : {a}\n  redis: {b}")
    if len(node) != len(ref):
        diffs += 1
        print(f"DIFF number of results: node {len(node)}, redis {len(ref)}")
    print(f"{len(ref)} checks, {diffs} differences")
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
