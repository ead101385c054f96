// SPDX-License-Identifier: GPL-3.0-or-later
// The one precompiled header: LibTorch costs 20-30 s per file to parse, this pays once.
#pragma once

#include <torch/torch.h>
