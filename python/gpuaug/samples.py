"""torchvision.transforms.v2's inputs for gpuaug's transforms, so that they drop into its pipelines.

Beside a plain image tensor, a transform takes what torchvision's take: ``tv_tensors.Image`` and
``Video`` (returned as such), PIL images, and samples of several inputs (``t(image, target)``, a
dict, nested tuples and lists). In a sample, the images are transformed and everything else
(boxes, masks, labels) passes through; the images are ``tv_tensors.Image``, ``Video`` and PIL
images, or, where there are none, the first plain tensor, as in torchvision. Every image of one
call gets the same draws, as torchvision's do. A 4-D ``Video`` is one video whose frames share
them, where a 4-D tensor is a batch of images with a draw each.

Geometric transforms (and Composes holding one) move a sample's ``BoundingBoxes``, ``Mask`` and
``KeyPoints`` as torchvision's would with the same parameters (``_targets``): those of one image
or video follow its draw; a batch's (a 4-D image, a 5-D video, a list of plain images) come in a
list or tuple of one a sample, the i-th following draw i.
"""

import sys
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch import nn
from torch.utils import _pytree as pytree

from ._targets import check_sizes, follow, is_target

# The keys of sample_params' dicts (ColorAugment's, the photometric and geometric transforms';
# a Compose's prefixed with an index, "2.factors"): a dict beside the image with one of them is
# replayed parameters, any other dict is a target (boxes, labels).
_PARAM_KEYS = {"factors", "order", "apply", "color", "brightness", "contrast", "gamma", "top",
               "left", "height", "width", "angle", "translate", "scale", "shear",
               "coefficients"}


def _loaded(name: str) -> Any:
    # tv_tensors and PIL images exist only once their modules are imported: none is imported here
    return sys.modules.get(name)


def _is_tv_tensor(x: Any) -> bool:
    tv_tensors = _loaded("torchvision.tv_tensors")
    return tv_tensors is not None and isinstance(x, tv_tensors.TVTensor)


def _is_params(x: Any) -> bool:
    return isinstance(x, dict) and any(
        isinstance(key, str) and key.rsplit(".", 1)[-1] in _PARAM_KEYS for key in x)


def _is_plain_call(inputs: Tuple[Any, ...], kwargs: Dict[str, Any]) -> bool:
    """``t(image)`` or ``t(image, params)`` with a plain tensor: the module's own call."""
    if not inputs:
        return True  # forward's own error
    if not isinstance(inputs[0], torch.Tensor) or _is_tv_tensor(inputs[0]):
        return False
    return len(inputs) == 1 or (len(inputs) == 2 and (inputs[1] is None or _is_params(inputs[1])))


def _kind(x: Any) -> Optional[str]:
    tv_tensors = _loaded("torchvision.tv_tensors")
    if tv_tensors is not None and isinstance(x, tv_tensors.TVTensor):
        if isinstance(x, tv_tensors.Video):
            return "video"
        return "image" if isinstance(x, tv_tensors.Image) else None
    pil = _loaded("PIL.Image")
    if pil is not None and isinstance(x, pil.Image):
        return "pil"
    return "tensor" if isinstance(x, torch.Tensor) else None


def _pil_to_tensor(name: str, image: Any) -> torch.Tensor:
    if image.mode not in ("RGB", "L"):
        raise TypeError(f"gpuaug.transforms.{name}: expected a PIL image of mode 'RGB' or 'L', "
                        f"got mode '{image.mode}'")
    import numpy  # PIL's pixels as an array; torchvision, whose pipelines give PIL images, has it
    pixels = torch.from_numpy(numpy.array(image, dtype=numpy.uint8, copy=True))
    return pixels.unsqueeze(0) if pixels.dim() == 2 else pixels.permute(2, 0, 1)


def _tensor_to_pil(out: torch.Tensor) -> Any:
    if out.dtype != torch.uint8:  # the transform's own dtype conversion: PIL has no such image
        return out
    # the mode of the output's channels: Grayscale(num_output_channels=1) makes an RGB image L
    pixels = out[0] if out.shape[0] == 1 else out.permute(1, 2, 0)
    mode = "L" if out.shape[0] == 1 else "RGB"
    return _loaded("PIL.Image").fromarray(pixels.contiguous().numpy(), mode=mode)


def _as_batch(name: str, x: Any, kind: str) -> torch.Tensor:
    if kind == "pil":
        return _pil_to_tensor(name, x)
    image = x.as_subclass(torch.Tensor)
    return image.unsqueeze(0) if kind == "video" and image.dim() == 4 else image


def _restored(out: torch.Tensor, like: Any, kind: str) -> Any:
    if kind == "pil":
        return _tensor_to_pil(out)
    if kind == "tensor":
        return out
    if kind == "video" and like.dim() == 4:
        out = out.squeeze(0)
    return _loaded("torchvision.tv_tensors").wrap(out, like=like)


def _images(kinds: List[Optional[str]]) -> List[int]:
    explicit = [i for i, kind in enumerate(kinds) if kind in ("image", "video", "pil")]
    if explicit:
        return explicit
    return [kinds.index("tensor")] if "tensor" in kinds else []


def _batched(image: Any, kind: str) -> bool:
    """Whether the image is a batch with a draw a sample, whose targets come one a sample."""
    if kind == "pil":
        return False
    return image.dim() == (5 if kind == "video" else 4)


def _sample_of(name: str, root: Any, path: Tuple[Any, ...], image_paths: List[Any], count: int,
               target: Any) -> int:
    """The sample of a batch of ``count`` whose draw a target follows: its index in the
    outermost list or tuple of ``count`` around it that holds no image (the sample's own
    container aside: ``t(images, boxes)``'s pair)."""
    node, innermost = root, None
    for depth in range(len(path) - 1):
        node = path[depth].get(node)
        holds_image = any(p[:depth + 1] == path[:depth + 1] for p in image_paths)
        if (type(node) in (list, tuple) and isinstance(path[depth + 1], pytree.SequenceKey)
                and not holds_image):
            if len(node) == count:
                return path[depth + 1].idx
            innermost = node
    kind = type(target).__name__
    if innermost is None:
        raise TypeError(f"gpuaug.transforms.{name}: a batch of {count} images takes its "
                        f"BoundingBoxes, Mask and KeyPoints in a list or tuple of {count}, the "
                        f"i-th following image i's draw; got one {kind} beside the batch")
    raise ValueError(f"gpuaug.transforms.{name}: a batch of {count} images takes its "
                     f"BoundingBoxes, Mask and KeyPoints in a list or tuple of {count}, the "
                     f"i-th following image i's draw; got a {kind} in a "
                     f"{type(innermost).__name__} of {len(innermost)}")


class TorchvisionInputs:
    """Takes torchvision.transforms.v2's inputs (above) in a module whose ``forward(image,
    params=None)`` takes a tensor. A plain tensor goes straight to the module's own call, which
    is what TorchScript, torch.compile and torch.export see."""

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        if torch.compiler.is_compiling() or _is_plain_call(inputs, kwargs):
            return nn.Module.__call__(self, *inputs, **kwargs)
        params = kwargs.pop("params", None)
        if kwargs:
            raise TypeError(f"gpuaug.transforms.{type(self).__name__}: unexpected keyword "
                            f"arguments {sorted(kwargs)}")
        if getattr(self, "geometric", False):
            return self._geometric_call(inputs, params)
        if len(inputs) == 2 and _is_params(inputs[1]):
            inputs, params = inputs[:1], inputs[1]
        return self._transform_sample(inputs, params)

    def _geometric_call(self, inputs: Tuple[Any, ...],
                        params: Optional[Dict[str, torch.Tensor]]) -> Any:
        """A geometric transform, or a Compose holding one: a list of plain images too (one
        batch), and samples, whose images it transforms, whose boxes, masks and key points
        follow their images' draws and whose labels pass through."""
        # (an empty dict: the params of a transform that draws nothing, Resize's say)
        if len(inputs) == 2 and (inputs[1] is None or _is_params(inputs[1])
                                 or (isinstance(inputs[1], dict) and not inputs[1])):
            inputs, params = inputs[:1], inputs[1]
        first = inputs[0] if inputs else None
        if isinstance(first, (list, tuple)) and first and all(
                isinstance(x, torch.Tensor) and not _is_tv_tensor(x) for x in first):
            if len(inputs) == 1:
                return nn.Module.__call__(self, first, params)
            return self._listed_sample(list(first), inputs[1:], params)
        return self._transform_sample(inputs, params)

    def _listed_sample(self, images: List[torch.Tensor], rest: Tuple[Any, ...],
                       params: Optional[Dict[str, torch.Tensor]]) -> Any:
        """A list of plain images, one batch (returned as one), and what is beside it: its
        targets in a list or tuple of one a sample, its labels."""
        entries, spec = pytree.tree_flatten_with_path(rest)
        leaves = [leaf for _, leaf in entries]
        sizes = [(image.shape[-2], image.shape[-1]) for image in images]
        followers = self._followers(rest, entries, [], True, sizes)
        if params is None and followers:
            params = self.sample_params(images)
        out = nn.Module.__call__(self, images, params)
        if followers:
            assert params is not None
            self._follow_targets(leaves, followers, params, out)
        return (out,) + tuple(pytree.tree_unflatten(leaves, spec))

    def _followers(self, root: Any, entries: List[Tuple[Any, Any]], image_paths: List[Any],
                   batched: bool, sizes: List[Tuple[int, int]]) -> Dict[int, int]:
        """The boxes, masks and key points among the sample's leaves that follow the geometry
        (a geometric transform's), each leaf's index to its sample's, their sizes checked."""
        if not getattr(self, "geometric", False):
            return {}
        name = type(self).__name__
        found = [i for i, (_, leaf) in enumerate(entries) if is_target(leaf)]
        samples = [_sample_of(name, root, entries[i][0], image_paths, len(sizes), entries[i][1])
                   if batched else 0 for i in found]
        check_sizes(name, [entries[i][1] for i in found], samples, sizes)
        return dict(zip(found, samples))

    def _follow_targets(self, leaves: List[Any], followers: Dict[int, int],
                        params: Dict[str, torch.Tensor], out: torch.Tensor) -> None:
        """The followers among ``leaves`` moved in place with ``params``; ``out``: the images'
        output, whose size empty masks take."""
        moved = follow(self, params, [leaves[i] for i in followers], list(followers.values()),
                       (out.shape[-2], out.shape[-1]))
        for i, target in zip(followers, moved):
            leaves[i] = target

    def _draws_for(self, batch: torch.Tensor) -> Dict[str, torch.Tensor]:
        """The draws for a batch: a geometric transform's videos ([N, T, C, H, W]) one each."""
        if batch.dim() == 5 and getattr(self, "geometric", False):
            return self.sample_params(batch[:, 0])
        return self.sample_params(batch)

    def _run(self, batch: torch.Tensor, params: Optional[Dict[str, torch.Tensor]]) -> Any:
        """The module on one image batch. A geometric transform's videos run as their frames,
        each frame with its video's draw (the photometric op takes videos as they are)."""
        if batch.dim() != 5 or not getattr(self, "geometric", False):
            return nn.Module.__call__(self, batch, params)
        videos, frames = batch.shape[:2]
        drawn = self._draws_for(batch) if params is None else params
        shared = {key: value.repeat_interleave(frames, 0) for key, value in drawn.items()}
        out = nn.Module.__call__(self, batch.flatten(0, 1), shared)
        return out.unflatten(0, (videos, frames))

    def _transform_sample(self, inputs: Tuple[Any, ...],
                          params: Optional[Dict[str, torch.Tensor]]) -> Any:
        name = type(self).__name__
        sample = inputs if len(inputs) > 1 else inputs[0]
        entries, spec = pytree.tree_flatten_with_path(sample)
        leaves = [leaf for _, leaf in entries]
        kinds = [_kind(leaf) for leaf in leaves]
        images = _images(kinds)
        if not images:  # torchvision passes it all through; an array, say, would come back as is
            found = [type(leaf).__name__ for leaf in leaves]
            raise TypeError(f"gpuaug.transforms.{name}: found no image in the input: expected "
                            "a tensor, a tv_tensors.Image or Video, or a PIL image, or a sample "
                            f"(tuple, list, dict) holding one; got {found}")
        batches = [_as_batch(name, leaves[i], kinds[i]) for i in images]
        first = batches[0]
        count = 1 if first.dim() == 3 else first.shape[0]
        followers = self._followers(sample, entries, [entries[i][0] for i in images],
                                    _batched(leaves[images[0]], kinds[images[0]]),
                                    [(first.shape[-2], first.shape[-1])] * count)
        if params is None and (len(batches) > 1 or followers):  # one draw for them all
            counts = [1 if b.dim() == 3 else b.shape[0] for b in batches]
            if len(set(counts)) > 1:
                raise ValueError(f"gpuaug.transforms.{name}: the images of one input share one "
                                 f"draw, so they need the same number of samples; got {counts}")
            params = self._draws_for(first)
        outs = [self._run(batch, params) for batch in batches]
        if followers:
            assert params is not None
            self._follow_targets(leaves, followers, params, outs[0])
        for i, out in zip(images, outs):
            leaves[i] = _restored(out, leaves[i], kinds[i])
        return pytree.tree_unflatten(leaves, spec)
