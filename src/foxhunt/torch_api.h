// The part of torch's C++ API foxhunt's kernels use, in place of <torch/extension.h>: that
// header (the whole C++ frontend: nn, optim, data loaders, autograd) was most of each kernel's
// compile, 55 of 62 CPU s on a Zen 3 core at -O3, where these headers take 19.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/csrc/utils/pybind.h>  // the Tensor and optional casters; namespace py

namespace torch {  // the names the kernels use, as <torch/extension.h> spells them
using at::ScalarType;
using at::Tensor;
using at::empty;
constexpr auto kFloat32 = at::kFloat;
constexpr auto kInt8 = at::kChar;
constexpr auto kInt32 = at::kInt;
}  // namespace torch
