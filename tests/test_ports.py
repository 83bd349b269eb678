"""Ports the tests reserve for servers they start later stay out of every other program's
way (testbed/ports.py says why: a probe once reached Spark's worker socket)."""

import socket

from testbed.ports import LOWEST, ephemeral_low, free_port


def test_a_free_port_lies_below_the_kernels_ephemeral_range() -> None:
    ports = [free_port() for _ in range(50)]
    assert all(LOWEST <= port < ephemeral_low() for port in ports), ports


def test_a_process_never_hands_out_the_same_port_twice() -> None:
    ports = [free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)


def test_a_free_port_can_be_listened_on_and_refuses_until_then() -> None:
    port = free_port()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass


def test_the_ephemeral_range_is_read_from_the_kernel() -> None:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        assert ephemeral_low() == int(f.read().split()[0])
