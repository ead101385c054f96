// SPDX-License-Identifier: GPL-3.0-or-later
// Anchors the precompiled header target; intentionally empty.
