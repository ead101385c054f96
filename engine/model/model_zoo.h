// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

#include "engine/model/model_spec.h"

namespace rookery::model {

/// The 784-512-512-10 multilayer perceptron for 28x28 images.
ModelSpec mlpSpec();
/// A small CNN for 28x28 images: two conv+pool blocks and two linear layers.
ModelSpec cnnSpec();

/// The names modelByName() knows.
std::vector<std::string> modelNames();
/// Throws rookery::Error listing the known names when `name` is unknown.
ModelSpec modelByName(const std::string &name);

} // namespace rookery::model
