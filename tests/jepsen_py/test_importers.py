"""Importers: the EDN reader, Jepsen history.edn, Jepsen text logs, Porcupine kv logs."""

from __future__ import annotations

import pytest

from jepsen_py.errors import BadInput
from jepsen_py.importers import (
    check_rules,
    detect_format,
    is_independent,
    load_history,
    unwrap_independent,
)
from jepsen_py.importers.edn import Keyword, loads, read_edn_history, to_plain
from jepsen_py.importers.jepsen_log import read_jepsen_log


def test_edn_reader_covers_what_jepsen_writes():
    v = loads('{:a [1 -2 3.5 nil true false "s\\"q\\n" \\c] :b #{:x} :c (1 2) ; comment\n'
              ' :d #_ :gone 4 :e #inst "2020-01-01" :f #jepsen.history.Op{:index 1} :g 7N :h foo/bar}')
    assert v[Keyword("a")] == [1, -2, 3.5, None, True, False, 's"q\n', "c"]
    assert v[Keyword("b")] == frozenset({"x"})
    assert v[Keyword("c")] == (1, 2)
    assert v[Keyword("d")] == 4  # #_ discards the next form
    assert v[Keyword("e")] == "2020-01-01"
    assert v[Keyword("f")] == {Keyword("index"): 1}
    assert v[Keyword("g")] == 7
    assert to_plain(v)["h"] == "foo/bar"
    assert to_plain(loads("[:read :x nil]")) == ["read", "x", None]
    with pytest.raises(ValueError):
        loads("{:a 1")
    with pytest.raises(ValueError):
        loads("{:a}")


def test_edn_history_vector_list_and_lines(tmp_path):
    vec = tmp_path / "v.edn"
    vec.write_text("[{:process 0, :type :invoke, :f :cas, :value [1 2]}\n"
                   " ; a comment between ops\n"
                   " {:process 0, :type :fail, :f :cas, :value [1 2], :error :mismatch}\n"
                   " {:process :nemesis, :type :info, :f :start, :value nil}]\n")
    lines: list[int] = []
    ops = read_edn_history(vec, lines)
    assert [o.type for o in ops] == ["invoke", "fail", "info"]
    assert ops[0].value == [1, 2] and ops[0].f == "cas" and ops[1].error == "mismatch"
    assert ops[2].process == "nemesis"
    assert lines == [1, 3, 4]
    lst = tmp_path / "l.edn"
    lst.write_text("({:process 1, :type :invoke, :f :txn, :value [[:read :x nil]], :time 5, :index 10})")
    (op,) = read_edn_history(lst)
    assert op.value == [["read", "x", None]] and op.time == 5 and op.index == 10
    per_line = tmp_path / "p.edn"
    per_line.write_text("{:process 0, :type :invoke, :f :get, :key \"k\", :value nil}\n"
                        "{:process 0, :type :ok, :f :get, :key \"k\", :value \"ab\"}\n")
    ops, fmt, lines = load_history(per_line)
    assert fmt == "porcupine-kv" and ops[1].value == "ab" and ops[1].key == "k" and lines == [1, 2]


def test_edn_bad_op_names_file_and_line(tmp_path):
    p = tmp_path / "h.edn"
    p.write_text("[{:process 0, :type :invoke, :f :read}\n {:process 0, :type :done, :f :read}]")
    with pytest.raises(BadInput, match=r"h\.edn:2: unknown op type :done"):
        read_edn_history(p)
    p.write_text("[{:process 0, :type :invoke, :f :read}\n {:type :ok, :f :read}]")
    with pytest.raises(BadInput, match=r"h\.edn:2: op has no :process"):
        read_edn_history(p)


def test_jepsen_log_reading(tmp_path):
    p = tmp_path / "etcd.log"
    p.write_text(
        "INFO  jepsen.core - starting\n"
        "INFO  jepsen.util - 0\t:invoke\t:cas\t[1 4]\n"
        "INFO  jepsen.util - 1   :invoke :read   nil\n"
        "INFO  jepsen.util - 0\t:fail\t:cas\t[1 4]\n"
        "INFO  jepsen.util - 1\t:fail\t:read\t:timed-out\n"
        "INFO  jepsen.util - 2\t:invoke\t:write\t3\n"
        "INFO  jepsen.util - 2\t:info\t:write\t:timed-out\n"
        "INFO  jepsen.util - :nemesis\t:info\t:start\tnil\n")
    lines: list[int] = []
    ops = read_jepsen_log(p, lines)
    assert lines == [2, 3, 4, 5, 6, 7, 8]
    assert [(o.process, o.type, o.f) for o in ops][:3] == [(0, "invoke", "cas"), (1, "invoke", "read"),
                                                         (0, "fail", "cas")]
    assert ops[2].value == [1, 4] and ops[2].error is None  # a definite compare failure
    assert ops[3].error == "timed-out" and ops[3].value is None
    assert ops[5].type == "info" and ops[5].value == 3 and ops[5].error == "timed-out"
    assert ops[6].process == "nemesis"
    assert detect_format(p) == "jepsen-log"
    check_rules(ops, lines, p)


def test_check_rules_names_line(tmp_path):
    p = tmp_path / "x.log"
    p.write_text("INFO  jepsen.util - 0\t:invoke\t:read\tnil\n"
                 "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n")
    lines: list[int] = []
    ops = read_jepsen_log(p, lines)
    with pytest.raises(BadInput, match=r"x\.log:2: process 0 invokes 'read' while its op from line 1"):
        check_rules(ops, lines, p)


def test_kv_importer_rejects_foreign_ops(tmp_path):
    p = tmp_path / "kv.txt"
    p.write_text('{:process 0, :type :invoke, :f :get, :key "1", :value nil}\n'
                 '{:process 0, :type :invoke, :f :cas, :key "1", :value nil}\n')
    with pytest.raises(BadInput, match="not a kv operation"):
        load_history(p, "porcupine-kv")
    with pytest.raises(BadInput, match="unknown format"):
        load_history(p, "xml")


def test_independent_histories_unwrap_to_keys(tmp_path):
    p = tmp_path / "ind.edn"
    p.write_text("{:process 0, :type :invoke, :f :write, :value [:a 1]}\n"
                 "{:process 0, :type :ok, :f :write, :value [:a 1]}\n"
                 "{:process 1, :type :invoke, :f :read, :value [:b nil]}\n"
                 "{:process 1, :type :ok, :f :read, :value [:b nil]}\n"
                 "{:process 1, :type :invoke, :f :cas, :value [:a [1 2]]}\n"
                 "{:process 1, :type :ok, :f :cas, :value [:a [1 2]]}\n")
    ops, _, _ = load_history(p)
    assert is_independent(ops)
    un = unwrap_independent(ops)
    assert [(o.key, o.value) for o in un][::2] == [("a", 1), ("b", None), ("a", [1, 2])]
    plain, _, _ = load_history(p)
    for o in plain:
        o.value = o.value[1]
    assert not is_independent(plain)
