"""The stop flag: a signal ends a traced loop between two steps, while it runs in C++."""

from __future__ import annotations

import os
import signal
import threading

import pytest
import tensorflow as tf

from models.core.stop import StopFlag, StopRequested


@pytest.fixture()
def restore_signals():
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, handler in handlers.items():
        signal.signal(signum, handler)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_a_running_traced_loop_between_steps(signum, restore_signals):
    flag = StopFlag.install()
    steps = tf.Variable(0)

    @tf.function(autograph=False)
    def loop(n):
        def go_on(i):
            return tf.logical_and(i < n, tf.logical_not(flag.variable.read_value()))

        def step(i):
            steps.assign_add(1)
            return [i + 1]

        return tf.while_loop(go_on, step, [tf.constant(0)])

    loop(tf.constant(10))  # traced before the signal is armed
    steps.assign(0)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signum))
    timer.start()
    ran = int(loop(tf.constant(2**31 - 1))[0])  # minutes of steps unless the flag ends it
    timer.join()
    assert 0 < ran < 2**31 - 1 and ran == int(steps.numpy())
    with pytest.raises(StopRequested) as stop:
        flag.check()
    assert stop.value.signum == signum


def test_installing_again_clears_the_flag(restore_signals):
    flag = StopFlag.install()
    os.kill(os.getpid(), signal.SIGTERM)
    threading.Event().wait(0.2)  # the watcher thread and the handler set it
    assert flag.requested and bool(flag.variable.numpy())
    again = StopFlag.install()
    assert again is flag and not again.requested and not bool(again.variable.numpy())
    again.check()
