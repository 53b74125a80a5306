"""Autograd modes and determinism for every op: nothing is saved for backward under no_grad or
inference_mode; forward and backward give the same bits twice under
torch.use_deterministic_algorithms(True), and the CPU kernels the same bits on 1 and 2 intra-op
threads. CPU only for now (the CUDA half is issue 11's GPU work)."""
import pytest
import torch

ops = torch.ops.gpuaug


def fresh(*shape, seed=0, scale=1.0, offset=0.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g) * scale + offset).requires_grad_()


# Each entry: inputs (fresh tensors requiring grad) and the op's outputs from them. Sizes large
# enough that two threads split the work (TensorIterator's grain: 32768 elements).
OPS = {
    "relu": (lambda: [fresh(256, 257, offset=-0.5)], lambda x: [ops.relu(x)]),
    "mul": (lambda: [fresh(256, 257, seed=1), fresh(257, seed=2)], lambda a, b: [ops.mul(a, b)]),
    "round_ste": (lambda: [fresh(256, 257, scale=8)], lambda x: [ops.round_ste(x)]),
    "color_transform": (
        lambda: [fresh(8, 3, 65, 67), fresh(8, 3, seed=1, offset=0.5), fresh(8, seed=2, scale=0.2),
                 fresh(8, seed=3, offset=0.5), fresh(8, seed=4, offset=0.5)],
        lambda *a: [ops.color_transform(*a)]),
    "lltm": (
        lambda: [fresh(300, 9, offset=-0.5), fresh(3 * 33, 42, seed=1, offset=-0.5),
                 fresh(3 * 33, seed=2), fresh(300, 33, seed=3), fresh(300, 33, seed=4)],
        lambda *a: list(ops.lltm(*a))),
}


def forward_backward(name):
    make, op = OPS[name]
    inputs = make()
    outputs = op(*inputs)
    grads = torch.autograd.grad([o.sum() for o in outputs], inputs)
    return [o.detach() for o in outputs] + list(grads)


@pytest.mark.parametrize("name", list(OPS))
def test_nothing_saved_without_grad(name):
    make, op = OPS[name]
    packed = []

    def pack(t):
        packed.append(t.shape)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        op(*make())
        # The hooks see what grad mode saves (round_ste's identity gradient needs nothing).
        assert bool(packed) == (name != "round_ste")
        packed.clear()
        with torch.no_grad():
            outputs = op(*make())
        assert not packed and all(o.grad_fn is None for o in outputs)
        with torch.inference_mode():
            outputs = op(*make())
        assert not packed and all(o.is_inference() for o in outputs)


@pytest.mark.parametrize("name", list(OPS))
def test_deterministic_algorithms(name):
    torch.use_deterministic_algorithms(True)
    try:
        first, second = forward_backward(name), forward_backward(name)
    finally:
        torch.use_deterministic_algorithms(False)
    for a, b in zip(first, second):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("name", list(OPS))
def test_same_bits_on_one_and_two_threads(name):
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = forward_backward(name)
        torch.set_num_threads(2)
        two = forward_backward(name)
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(one, two):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
