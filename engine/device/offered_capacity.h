// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

#include "engine/device/capability_profile.h"
#include "engine/device/governor_settings.h"

namespace rookery::device {

/// What training takes beside the memory the planner counts (the model, its optimizer
/// state, activations, stashes, copies): LibTorch's and OpenBLAS's code pages, touched
/// first when training starts, and the allocator arena of the training threads. Measured
/// on 2026-12-06 with the transformer job on seven nodes: 35-50 MiB per node process
/// (file-backed pages 105 -> 121 MiB, a second glibc arena of 20-28 MiB). A capped node
/// keeps it out of what it offers, so the planner's figure plus this stays under the cap.
inline constexpr uint64_t kTrainingAllowanceBytes = uint64_t(64) << 20;

/// What a volunteer offers the swarm: its measured profile, with available memory
/// limited to what its memory cap leaves beside the `residentBytes` this process holds
/// already (the cap is on the whole process's resident memory, and the program, its
/// libraries and the dataset take a couple of hundred MiB before any model does) and
/// beside kTrainingAllowanceBytes; and its GFLOP/s within its CPU caps: at most one
/// thread's figure per core it may use (never more than all threads measured), times
/// its CPU share. The caps are those that hold while the volunteer uses the machine
/// (or, with "run only when idle", those while it is idle): a node gets more when its
/// user goes idle, and the plan should hold when they come back. (Until 2026-12-06 the
/// CPU caps were left out: with links assumed at 12.5 MB/s and compute and transfer
/// added up, scaled claims made the planner cut stages of nothing but the Flatten.)
/// GPUs are listed but offer no GFLOP/s: stages
/// train on the CPU (engine/train), and the coordinator plans with a GPU's figure
/// where one is given. The coordinator plans with these figures, and checks them
/// against the speed the node then trains at.
/// The CPU limits an offer is made within: those while the user is active, or those
/// while the machine is idle for a volunteer who runs only then.
const Limits &offeredLimits(const GovernorSettings &caps);

CapabilityProfile offeredProfile(CapabilityProfile measured, const GovernorSettings &caps, uint64_t residentBytes = 0);

} // namespace rookery::device
