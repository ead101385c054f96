// SPDX-License-Identifier: GPL-3.0-or-later
// ModelSpec <-> JSON. Kept apart so only this file pays for nlohmann/json.
#include "engine/model/model_spec.h"

#include <nlohmann/json.hpp>

#include "engine/common/error.h"

namespace rookery::model {
namespace {

using nlohmann::json;

LayerKind kindFromName(const std::string &name)
{
    for (auto kind : kAllLayerKinds)
        if (layerKindName(kind) == name)
            return kind;
    throw Error("model spec: unknown layer kind '" + name + "'");
}

} // namespace

std::string toJson(const ModelSpec &spec)
{
    json layers = json::array();
    for (const auto &l : spec.layers) {
        json j = {{"kind", std::string(layerKindName(l.kind))}};
        if (l.kind == LayerKind::Linear || l.kind == LayerKind::Conv2d || l.kind == LayerKind::Residual ||
            l.kind == LayerKind::PatchEmbed || l.kind == LayerKind::Encoder) {
            j["in"] = l.in;
            j["out"] = l.out;
        }
        if (l.kind == LayerKind::Residual || l.kind == LayerKind::PatchEmbed)
            j["kernel"] = l.kernel;
        if (l.kind == LayerKind::LayerNorm || l.kind == LayerKind::BatchNorm)
            j["in"] = l.in;
        if (l.kind == LayerKind::Encoder) {
            j["hidden"] = l.hidden;
            j["heads"] = l.heads;
        }
        if (l.kind == LayerKind::Dropout)
            j["rate"] = l.rate;
        if (l.kind == LayerKind::Conv2d || l.kind == LayerKind::MaxPool2d || l.kind == LayerKind::AvgPool2d) {
            j["kernel"] = l.kernel;
            j["stride"] = l.stride;
        }
        if (l.kind == LayerKind::Conv2d)
            j["padding"] = l.padding;
        layers.push_back(std::move(j));
    }
    json j = {{"name", spec.name}, {"input", spec.input.dims}, {"classes", spec.classes}, {"layers", layers}};
    return j.dump();
}

ModelSpec modelSpecFromJson(std::string_view text)
{
    ModelSpec spec;
    try {
        const json j = json::parse(text);
        spec.name = j.at("name").get<std::string>();
        spec.input.dims = j.at("input").get<std::vector<int64_t>>();
        spec.classes = j.at("classes").get<int>();
        for (const auto &l : j.at("layers")) {
            LayerSpec layer;
            layer.kind = kindFromName(l.at("kind").get<std::string>());
            layer.in = l.value("in", int64_t(0));
            layer.out = l.value("out", int64_t(0));
            layer.kernel = l.value("kernel", 0);
            layer.stride = l.value("stride", 1);
            layer.padding = l.value("padding", 0);
            layer.hidden = l.value("hidden", int64_t(0));
            layer.heads = l.value("heads", 0);
            layer.rate = l.value("rate", 0.0);
            spec.layers.push_back(layer);
        }
    } catch (const json::exception &e) {
        throw Error(std::string("model spec is not valid JSON of the expected form: ") + e.what());
    }
    validate(spec);
    return spec;
}

} // namespace rookery::model
