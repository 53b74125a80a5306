"""RandomAffine, RandomRotation and RandomPerspective, as torchvision.transforms.v2's, each sample
drawing its own parameters on the images' device (no host synchronisation), and the op's ``warp``
rows of their parameters: torchvision's inverse affine matrix (``_get_inverse_affine_matrix``) and
perspective coefficients (``_get_perspective_coeffs``), computed per sample in float64."""

import math
import numbers
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch

from ._geometry import (Value, _check_keys, _Geometric, _Plan, fill_values, functional,
                        interpolation_code, per_sample)

AFFINE, PERSPECTIVE = 1.0, 2.0  # the op's warp kinds (column 8 of its rows; 0: none)
_RADIANS = math.pi / 180.0  # math.radians' factor


def warp_interpolation(owner: str, interpolation: object) -> int:
    """The op's code of nearest or bilinear, the two torchvision warps tensors with."""
    code = interpolation_code(owner, interpolation)
    if code not in (0, 1):
        name = getattr(interpolation, "value", interpolation)
        raise ValueError(f"gpuaug.{owner}: interpolation mode '{name}' is unsupported with "
                         "Tensor input: torchvision's affine, rotate and perspective take nearest "
                         "or bilinear")
    return code


def _double(value: Union[Value, float], like: torch.Tensor) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.double().expand_as(like)
    return torch.full_like(like, float(value))


def _host_doubles(values: List[float], like: torch.Tensor) -> torch.Tensor:
    # one a sample (or one for all) on the device of `like`
    if len(set(values)) == 1:
        return torch.full_like(like, float(values[0]))
    return torch.tensor(values, dtype=torch.float64).to(like.device)


def affine_rows(angle: torch.Tensor, translate: torch.Tensor, scale: torch.Tensor,
                shear: torch.Tensor, center_x: torch.Tensor, center_y: torch.Tensor
                ) -> torch.Tensor:
    """The op's warp rows ([S, 9] float64) of torchvision's _get_inverse_affine_matrix for each
    sample (``angle``, ``scale``, centre [S]; ``translate``, ``shear`` [S, 2]; the centre relative
    to the image's), in its order of operations."""
    rot = angle * _RADIANS
    sx, sy = shear[:, 0] * _RADIANS, shear[:, 1] * _RADIANS
    tx, ty = translate[:, 0], translate[:, 1]
    cos_sy, tan_sx = torch.cos(sy), torch.tan(sx)
    rot_minus_sy = rot - sy
    cx_plus_tx, cy_plus_ty = center_x + tx, center_y + ty
    a = torch.cos(rot_minus_sy) / cos_sy
    b = -(a * tan_sx + torch.sin(rot))
    c = torch.sin(rot_minus_sy) / cos_sy
    d = torch.cos(rot) - c * tan_sx
    m0, m1, m3, m4 = d / scale, -b / scale, -c / scale, a / scale
    m2 = 0.0 + (center_x - m0 * cx_plus_tx - m1 * cy_plus_ty)
    m5 = 0.0 + (center_y - m3 * cx_plus_tx - m4 * cy_plus_ty)
    zero = torch.zeros_like(m0)
    return torch.stack([m0, m1, m2, m3, m4, m5, zero, zero, torch.full_like(m0, AFFINE)], 1)


def _centre(center: Optional[List[float]], plan: _Plan, like: torch.Tensor
            ) -> Tuple[torch.Tensor, torch.Tensor]:
    """torchvision's centre relative to the image's (0 without one), per sample."""
    if center is None:
        return torch.zeros_like(like), torch.zeros_like(like)
    return (center[0] - _double(plan.w, like) * 0.5, center[1] - _double(plan.h, like) * 0.5)


def perspective_coefficients(endpoints: torch.Tensor, width: torch.Tensor,
                             height: torch.Tensor) -> torch.Tensor:
    """torchvision's coefficients of RandomPerspective: the image's corners (top left, top
    right, bottom right, bottom left) going to ``endpoints`` [S, 4, 2]."""
    w1, h1 = width - 1, height - 1
    zero = torch.zeros_like(width)
    start = torch.stack([torch.stack([zero, zero], 1), torch.stack([w1, zero], 1),
                         torch.stack([w1, h1], 1), torch.stack([zero, h1], 1)], 1)  # [S, 4, 2]
    return solved_coefficients(start, endpoints)


def solved_coefficients(start: torch.Tensor, endpoints: torch.Tensor) -> torch.Tensor:
    """torchvision's _get_perspective_coeffs for each sample ([S, 4, 2] float64 points): its 8x8
    system solved in float64 (torchvision: least squares, the same solution), rounded to float32
    as it rounds it."""
    ex, ey = endpoints[..., 0], endpoints[..., 1]
    sx, sy = start[..., 0], start[..., 1]
    one, nil = torch.ones_like(ex), torch.zeros_like(ex)
    even = torch.stack([ex, ey, one, nil, nil, nil, -sx * ex, -sx * ey], -1)
    odd = torch.stack([nil, nil, nil, ex, ey, one, -sy * ex, -sy * ey], -1)
    a = torch.stack([even, odd], 2).reshape(-1, 8, 8)
    # solve_ex: solve's check of the factorisation would synchronise with the host
    solved = torch.linalg.solve_ex(a, start.reshape(-1, 8)).result
    return solved.float().double()


def _angles(name: str, value: object, sizes: Tuple[int, ...]) -> List[float]:
    # torchvision's _setup_angle: a number d is (-d, d)
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        return [-float(value), float(value)]
    if not isinstance(value, Sequence) or len(value) not in sizes:
        raise ValueError(f"{name} should be a sequence of length {' or '.join(map(str, sizes))}.")
    return [float(v) for v in value]


def _check_center(center: object) -> Optional[List[float]]:
    if center is None:
        return None
    if not isinstance(center, Sequence) or len(center) != 2:
        raise ValueError("center should be a sequence of length 2.")
    return [float(c) for c in center]


def _uniform(u: torch.Tensor, low: float, high: float) -> torch.Tensor:
    # uniform_(low, high) in float32, as torchvision draws, then float64
    return (u * (high - low) + low).double()


class RandomAffine(_Geometric):
    """torchvision.transforms.v2.RandomAffine: each sample's angle in ``degrees``, translation up
    to ``translate`` times the image's size (rounded to pixels), scale in ``scale``, shear in
    ``shear`` (x, or x and y), about ``center`` (the image's centre by default); the image the
    same size, ``fill`` where it samples outside. Params: ``angle``, ``scale`` float64 [N],
    ``translate``, ``shear`` float64 [N, 2]."""

    warps = True

    def __init__(self, degrees: object, translate: Optional[Sequence[float]] = None,
                 scale: Optional[Sequence[float]] = None, shear: object = None,
                 interpolation: object = "nearest", fill: object = 0,
                 center: Optional[List[float]] = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        self.degrees = _angles("degrees", degrees, (2,))
        if translate is not None:
            if not isinstance(translate, Sequence) or len(translate) != 2:
                raise ValueError("translate should be a sequence of length 2.")
            if not all(0.0 <= t <= 1.0 for t in translate):
                raise ValueError("translation values should be between 0 and 1")
        self.translate = None if translate is None else [float(t) for t in translate]
        if scale is not None:
            if not isinstance(scale, Sequence) or len(scale) != 2:
                raise ValueError("scale should be a sequence of length 2.")
            if not all(s > 0 for s in scale):
                raise ValueError("scale values should be positive")
        self.scale = None if scale is None else [float(s) for s in scale]
        self.shear = None if shear is None else _angles("shear", shear, (2, 4))
        self.interpolation = warp_interpolation("transforms.RandomAffine", interpolation)
        self.fill = fill_values("transforms.RandomAffine", fill)
        self.center = _check_center(center)

    def extra_repr(self) -> str:
        return (f"degrees={self.degrees}, translate={self.translate}, scale={self.scale}, "
                f"shear={self.shear}, interpolation={self.interpolation}, fill={self.fill}, "
                f"center={self.center}")

    def _draw(self, image: torch.Tensor, count: int, hs: List[int],
              ws: List[int]) -> Dict[str, torch.Tensor]:
        u = self._uniforms(count, 6, image)
        angle = _uniform(u[:, 0], *self.degrees)
        if self.translate is not None:
            max_dx = _host_doubles([self.translate[0] * w for w in ws], angle)
            max_dy = _host_doubles([self.translate[1] * h for h in hs], angle)
            # uniform_(-max, max) in float32, rounded half to even as Python's round
            tx = torch.round((u[:, 1] * (2 * max_dx).float() - max_dx.float()).double())
            ty = torch.round((u[:, 2] * (2 * max_dy).float() - max_dy.float()).double())
        else:
            tx = ty = torch.zeros_like(angle)
        scale = (_uniform(u[:, 3], *self.scale) if self.scale is not None
                 else torch.ones_like(angle))
        shear_x = shear_y = torch.zeros_like(angle)
        if self.shear is not None:
            shear_x = _uniform(u[:, 4], self.shear[0], self.shear[1])
            if len(self.shear) == 4:
                shear_y = _uniform(u[:, 5], self.shear[2], self.shear[3])
        return {"angle": angle, "translate": torch.stack([tx, ty], 1), "scale": scale,
                "shear": torch.stack([shear_x, shear_y], 1)}

    def _apply(self, plan: _Plan, params: Dict[str, torch.Tensor]) -> bool:
        _check_keys("RandomAffine", params, ["angle", "translate", "scale", "shear"])
        angle = params["angle"].double()
        cx, cy = _centre(self.center, plan, angle)
        rows = affine_rows(angle, params["translate"].double(), params["scale"].double(),
                           params["shear"].double(), cx, cy)
        return plan.warp_by(rows, self.interpolation, self.fill)

    def _follow(self, target: torch.Tensor, row: Dict[str, object]) -> torch.Tensor:
        return functional().affine(target, row["angle"], row["translate"], row["scale"],
                                   row["shear"], center=self.center)


def rotation_rows(angle: torch.Tensor, cx: torch.Tensor, cy: torch.Tensor) -> torch.Tensor:
    """torchvision's rotate_image matrix: the angle modulo 360, negated, about the centre."""
    zero = torch.zeros_like(angle)
    return affine_rows(-torch.remainder(angle, 360.0), torch.stack([zero, zero], 1),
                       torch.ones_like(angle), torch.stack([zero, zero], 1), cx, cy)


class RandomRotation(_Geometric):
    """torchvision.transforms.v2.RandomRotation: each sample rotated by an angle in ``degrees``
    about ``center`` (the image's centre by default), the image the same size, ``fill`` where it
    samples outside. ``expand=True`` is refused: each sample's angle would give it a size of its
    own. Params: ``angle`` float64 [N]."""

    warps = True

    def __init__(self, degrees: object, interpolation: object = "nearest", expand: bool = False,
                 center: Optional[List[float]] = None, fill: object = 0, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        self.degrees = _angles("degrees", degrees, (2,))
        if expand:
            raise ValueError("gpuaug.transforms.RandomRotation: expand=True is not supported: "
                             "each sample's angle would give it a size of its own; rotate "
                             "without expand (and pad first), or use torchvision's")
        self.interpolation = warp_interpolation("transforms.RandomRotation", interpolation)
        self.expand = False
        self.center = _check_center(center)
        self.fill = fill_values("transforms.RandomRotation", fill)

    def extra_repr(self) -> str:
        return (f"degrees={self.degrees}, interpolation={self.interpolation}, "
                f"center={self.center}, fill={self.fill}")

    def _draw(self, image: torch.Tensor, count: int, hs: List[int],
              ws: List[int]) -> Dict[str, torch.Tensor]:
        return {"angle": _uniform(self._uniforms(count, 1, image)[:, 0], *self.degrees)}

    def _apply(self, plan: _Plan, params: Dict[str, torch.Tensor]) -> bool:
        _check_keys("RandomRotation", params, ["angle"])
        angle = params["angle"].double()
        cx, cy = _centre(self.center, plan, angle)
        return plan.warp_by(rotation_rows(angle, cx, cy), self.interpolation, self.fill)

    def _follow(self, target: torch.Tensor, row: Dict[str, object]) -> torch.Tensor:
        return functional().rotate(target, row["angle"], center=self.center)


def perspective_rows(coefficients: torch.Tensor, apply: torch.Tensor) -> torch.Tensor:
    """The op's warp rows of torchvision's perspective coefficients [S, 8], where ``apply``."""
    kind = torch.where(apply.bool(), PERSPECTIVE, 0.0).to(torch.float64)
    return torch.cat([coefficients.double(), kind.unsqueeze(1)], 1)


class RandomPerspective(_Geometric):
    """torchvision.transforms.v2.RandomPerspective: with probability ``p`` a sample's corners
    move inwards by up to ``distortion_scale`` of half its size (each drawn per sample), the
    image warped to match (torchvision's perspective coefficients). Params: ``coefficients``
    float64 [N, 8] (torchvision's, rounded to float32 as it rounds them), ``apply`` bool [N]."""

    warps = True

    def __init__(self, distortion_scale: float = 0.5, p: float = 0.5,
                 interpolation: object = "bilinear", fill: object = 0, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        if not (0 <= distortion_scale <= 1):
            raise ValueError("Argument distortion_scale value should be between 0 and 1")
        if not (0.0 <= p <= 1.0):
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        self.distortion_scale = float(distortion_scale)
        self.p = float(p)
        self.interpolation = warp_interpolation("transforms.RandomPerspective", interpolation)
        self.fill = fill_values("transforms.RandomPerspective", fill)

    def extra_repr(self) -> str:
        return (f"distortion_scale={self.distortion_scale}, p={self.p}, "
                f"interpolation={self.interpolation}, fill={self.fill}")

    def _draw(self, image: torch.Tensor, count: int, hs: List[int],
              ws: List[int]) -> Dict[str, torch.Tensor]:
        u = self._uniforms(count, 9, image).double()
        like = u[:, 0]
        bound_h = [int(self.distortion_scale * (h // 2)) + 1 for h in hs]
        bound_w = [int(self.distortion_scale * (w // 2)) + 1 for w in ws]
        bh, bw = _host_doubles(bound_h, like), _host_doubles(bound_w, like)
        h, w = _host_doubles(hs, like), _host_doubles(ws, like)

        def randint(k: int, low: torch.Tensor, span: torch.Tensor) -> torch.Tensor:
            return low + torch.floor(u[:, k] * span)  # randint(low, low + span)

        zero = torch.zeros_like(like)
        corners = [(randint(1, zero, bw), randint(2, zero, bh)),
                   (randint(3, w - bw, bw), randint(4, zero, bh)),
                   (randint(5, w - bw, bw), randint(6, h - bh, bh)),
                   (randint(7, zero, bw), randint(8, h - bh, bh))]
        endpoints = torch.stack([torch.stack(c, 1) for c in corners], 1)
        return {"coefficients": perspective_coefficients(endpoints, w, h),
                "apply": u[:, 0] < self.p}

    def _apply(self, plan: _Plan, params: Dict[str, torch.Tensor]) -> bool:
        _check_keys("RandomPerspective", params, ["coefficients", "apply"])
        rows = perspective_rows(params["coefficients"], params["apply"])
        return plan.warp_by(rows, self.interpolation, self.fill)

    def _follow(self, target: torch.Tensor, row: Dict[str, object]) -> torch.Tensor:
        if not row["apply"]:
            return target
        return functional().perspective(target, None, None, coefficients=row["coefficients"])
