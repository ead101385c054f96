// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "engine/coord/coordinator.h"

namespace rookery::app {

/// Everything rookery-coordinator can be told on its command line.
struct CoordinatorOptions
{
    coord::CoordinatorSettings settings;
    bool quiet = false;
    /// `rookery-coordinator invite`: make a join token, print the join string with it and
    /// exit (with `inviteList`: list the invites instead).
    bool invite = false;
    int64_t inviteUses = 1;
    int64_t inviteDays = 7;
    std::string inviteNote;
    bool inviteList = false;
    /// `rookery-coordinator dataset-hash DIR`: print the content hash of the dataset in
    /// DIR (for a job file's dataset.sha256) and exit.
    std::string datasetHashDir;
    /// `rookery-coordinator dataset add|list ...`: the words from "add" on, after the
    /// program's name (runDatasetCommand); empty otherwise.
    std::vector<std::string> datasetCommand;
    /// The copy of Fashion-MNIST to serve (--dataset-dir), and the job's dataset hash
    /// (empty: none given); main() settles what is served (coord::settleServedDataset).
    std::filesystem::path fashionMnistDir;
    std::string jobSha256;
    /// --job: the job file's name, and notes to print at start (what it set, what was
    /// not checked).
    std::string jobName;
    std::vector<std::string> jobNotes;
};

/// Parses argv into `options`; a first word "invite" sets `invite`, "dataset-hash DIR"
/// `datasetHashDir`. With --job FILE the run settings come from the job file (validated
/// whole before anything starts), and run options given as well override them. Returns
/// false when --help or --version was shown.
/// Throws rookery::Error on bad input.
bool parseCoordinatorOptions(int argc, char **argv, CoordinatorOptions &options);

} // namespace rookery::app
