//===- ConfigSchema.h - dice.toml's keys, for other schemas -----*- C++ -*-===//
//
// The fields of dice.toml (Config.cpp), so that another configuration that
// takes some of its sections (dice-train's [sampling] and [verifier]) reads
// them by the same rules, and the checks that relate its keys.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_CONFIG_CONFIGSCHEMA_H
#define DICE_CONFIG_CONFIGSCHEMA_H

#include "dice/Config/Config.h"
#include "dice/Config/Schema.h"

namespace dice {

/// Every key of dice.toml, in the order its documentation lists them.
const std::vector<schema::Field<Config>> &configFields();

/// What relates dice.toml's keys to each other (denoising steps within a
/// block); the error points at the key `where` says this document set.
Status checkConfigRelations(const Config &config,
                            const schema::KeyRegions &where,
                            const std::string &file);

} // namespace dice

#endif // DICE_CONFIG_CONFIGSCHEMA_H
