// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/net: includes the generated protobuf header (wire.proto). Maps
// our message structs to Envelopes (wire_schema_encode.cpp) and back
// (wire_schema_decode.cpp), after checking an Envelope's strings and lists against the
// limits (wire_schema_limits.cpp); the codec (wire_codec.cpp) does framing, limits and
// tensors.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/net/wire.pb.h"
#include "engine/net/wire_codec.h"

namespace rookery::net::schema {

/// A tensor to place in the frame body, in order, with the descriptor to fill in.
struct OutTensor
{
    const TensorBuffer *source;
    wire::Tensor *descriptor;
    bool compressible; ///< activations and gradients may travel as fp16/bf16
    const char *role;  ///< "activations", "labels", ... for error messages
    /// Float32 values already exact in this precision: sent in it on any link
    ValuePrecision fixed = ValuePrecision::Float32;
};

/// The bytes a tensor of `elements` values of `dtype` takes in `encoding`.
uint64_t encodedBytes(wire::Encoding encoding, DType dtype, uint64_t elements);

/// Fills `envelope` from `message`; appends the tensors in body order.
void toEnvelope(const Message &message, wire::Envelope &envelope, std::vector<OutTensor> &tensors);

/// A descriptor in body order and what it is for.
struct InTensor
{
    const wire::Tensor *descriptor;
    const char *role;
};

/// The descriptors of `envelope` in body order; empty on a missing required tensor
/// (then `reason` says which).
std::vector<InTensor> tensorDescriptors(const wire::Envelope &envelope, std::string &reason);

/// Checks strings and lists against the limits; returns a reason or "".
std::string checkFields(const wire::Envelope &envelope, const WireLimits &limits);

/// Builds the message; `tensors[i]` belongs to tensorDescriptors()[i]. Returns nullopt
/// and sets `reason` on a field this version cannot accept.
std::optional<Message> fromEnvelope(const wire::Envelope &envelope, std::vector<TensorBuffer> &tensors,
                                    std::string &reason);

} // namespace rookery::net::schema
