// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers shared by the Qt Test executables.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <QProcess>
#include <QString>
#include <QStringList>

namespace rookery::test {

/// Polls `predicate` (processing Qt events) until it holds or `timeout` passes.
bool waitFor(const std::function<bool()> &predicate, std::chrono::milliseconds timeout);

/// A loopback TCP port that was free a moment ago.
uint16_t freeLoopbackPort();

/// Where Fashion-MNIST lives for tests.
std::filesystem::path fashionMnistDir();

/// The path of one of our programs (rookery-node, rookery-coordinator, ...) in the build tree.
QString programPath(const QString &name);

/// Runs a program to completion; returns its exit code (-1 if it crashed or timed out)
/// and fills stdout/stderr.
int runProgram(const QString &program, const QStringList &args, QString *out = nullptr, QString *err = nullptr,
               std::chrono::milliseconds timeout = std::chrono::minutes(5));

/// The whole file as bytes; empty when missing.
std::vector<char> readFileBytes(const std::filesystem::path &path);

/// Writes `bytes` as a gzip file.
void writeGzip(const std::filesystem::path &path, const std::vector<unsigned char> &bytes);

} // namespace rookery::test
