"""Client-side Kerberos checks against stand-ins that answer as a recorded Kerberos
NameNode did; the whole refusal, client to cluster, is tests/test_secure_yarn.py's."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tfyarn.security.kerberos import RPC_HEADER_WITHOUT_SASL, namenode_refuses_simple

# What a Kerberos NameNode (Hadoop 3.5.0, the secure local cluster) answered a connection
# header without SASL, recorded.
NAMENODE_REFUSAL = (
    b'\x00\x00\x00\x89\x87\x01\x08\xff\xff\xff\xff\x0f\x10\x02\x18\t"1org.apache.hadoop.'
    b"security.AccessControlException*BSIMPLE authentication is not enabled.  Available:"
    b"[TOKEN, KERBEROS]0\x0f:\x00@\x01")


@pytest.mark.parametrize(("answer", "words"), [
    (NAMENODE_REFUSAL, "SIMPLE authentication is not enabled.  Available:[TOKEN, KERBEROS]"),
    (None, None),  # an open NameNode waits for the rest of the connection
])
def test_a_namenode_that_wants_kerberos_is_told_by_its_answer(answer: bytes | None,
                                                             words: str | None) -> None:
    heard = []
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            heard.append(conn.recv(16))
            if answer is not None:
                conn.sendall(answer)
            else:
                time.sleep(1.0)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert namenode_refuses_simple("127.0.0.1", server.getsockname()[1], timeout_s=0.5) == words
    thread.join(5)
    server.close()
    assert heard == [RPC_HEADER_WITHOUT_SASL]
