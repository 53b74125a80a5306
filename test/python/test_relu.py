"""gpuaug::relu and gpuaug::_relu_backward: values, gradients, double backward, errors."""
import math
import re

import pytest
import torch

from gpuaug_testing import (DEVICES, DTYPES, assert_exact, make_input, relu_grad_ref,
                            relu_ref)

relu = torch.ops.gpuaug.relu
relu_backward = torch.ops.gpuaug._relu_backward


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5, 11), (4097,)])
def test_values(shape, dtype, device):
    x = make_input(shape, dtype, device, seed=1)
    y = relu(x)
    assert_exact(y, relu_ref(x))
    assert_exact(y, torch.relu(x))
    if x.numel() > 1:
        assert (y > 0).any() and (y == 0).any()   # both branches were taken


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_inf_and_zero(dtype, device):
    x = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0, -1.5, 2.0], dtype=dtype, device=device)
    y = relu(x)
    assert_exact(y, torch.tensor([math.nan, math.inf, 0, 0, 0, 0, 2.0], dtype=dtype, device=device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gradient(dtype, device):
    x = make_input((6, 9), dtype, device, seed=2)
    x[0, :3] = 0   # the gradient at 0 is 0
    x.requires_grad_()
    w = make_input((6, 9), dtype, device, seed=3)
    relu(x).backward(w)
    expected = torch.where(x.detach() > 0, w, torch.zeros_like(w))
    assert_exact(x.grad, expected)
    assert (x.grad[0, :3] == 0).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_backward_op(dtype, device):
    x = make_input((5, 13), dtype, device, seed=4)
    x[1, 1] = math.nan
    grad = make_input((5, 13), dtype, device, seed=5)
    assert_exact(relu_backward(grad, x), relu_grad_ref(grad, x))


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck_and_gradgradcheck(device):
    x = make_input((4, 5), torch.float64, device, seed=6, requires_grad=True)
    assert torch.autograd.gradcheck(relu, (x,))
    assert torch.autograd.gradgradcheck(relu, (x,))
    grad = make_input((4, 5), torch.float64, device, seed=7, requires_grad=True)
    # relu_backward is linear in grad; x only selects (its derivative is zero almost everywhere).
    assert torch.autograd.gradcheck(lambda g: relu_backward(g, x.detach()), (grad,))
    assert torch.autograd.gradgradcheck(lambda g: relu_backward(g, x.detach()), (grad,))


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward(device):
    x = make_input((3, 8), torch.float32, device, seed=8, requires_grad=True)
    w = make_input((3, 8), torch.float32, device, seed=9, requires_grad=True)
    v = make_input((3, 8), torch.float32, device, seed=10)
    (gx,) = torch.autograd.grad(relu(x), x, w, create_graph=True)
    assert gx.requires_grad
    gw, gxx = torch.autograd.grad(gx, (w, x), v, allow_unused=True)
    assert_exact(gw, torch.where(x.detach() > 0, v, torch.zeros_like(v)))
    assert gxx is None or bool((gxx == 0).all())


def test_bad_inputs():
    msg = ("gpuaug::relu: expected argument 'x' to have a floating dtype (float32, float64, "
           "float16 or bfloat16), but got Long")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        relu(torch.arange(4))
    with pytest.raises(RuntimeError, match=r"gpuaug::relu: .*'x'.* but got Int"):
        relu(torch.arange(4, dtype=torch.int32))
    with pytest.raises(RuntimeError, match=r"gpuaug::relu: .*'x'.* but got Bool"):
        relu(torch.ones(4, dtype=torch.bool))
    with pytest.raises(RuntimeError, match=r"gpuaug::relu: .*'x'.* but got ComplexFloat"):
        relu(torch.ones(4, dtype=torch.complex64))
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::_relu_backward: expected 'grad' to have the shape of 'x' [3], but got [4]")):
        relu_backward(torch.ones(4), torch.ones(3))
    with pytest.raises(RuntimeError, match=re.escape(
            "gpuaug::_relu_backward: expected 'grad' to have the dtype of 'x' (Float), but got Double")):
        relu_backward(torch.ones(3, dtype=torch.float64), torch.ones(3))


def test_python_wrapper_type_error():
    # Not the dispatcher's schema dump: what was expected and what came.
    import gpuaug
    with pytest.raises(TypeError, match=re.escape(
            "gpuaug.relu: expected 'x' to be a torch.Tensor, but got float")):
        gpuaug.relu(1.0)


# ---------------------------------------------------------------------------------------------
# Schema and opcheck (schema, autograd registration, fake tensors and AOT dispatch).

def test_schema():
    assert str(relu.default._schema) == "gpuaug::relu(Tensor x) -> Tensor"
    assert str(relu_backward.default._schema) == (
        "gpuaug::_relu_backward(Tensor grad, Tensor x) -> Tensor")


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device, requires_grad):
    def t(shape, seed):
        return make_input(shape, torch.float32, device, seed).requires_grad_(requires_grad)
    torch.library.opcheck(relu.default, (t((3, 5), 1),))
    channels_last = t((2, 3, 4, 5), 2).detach().contiguous(memory_format=torch.channels_last)
    torch.library.opcheck(relu.default, (channels_last.requires_grad_(requires_grad),))
    torch.library.opcheck(relu_backward.default, (t((3, 5), 3), t((3, 5), 4)))
