#!/usr/bin/env python3
"""Derives vpic-sim's table from vPIC's nested DecodeVin rows to the flat DecodeVinValues keys.

Usage: apps/vpic-sim/tools/derive_nested_keys.py [DATA_DIR]   (default: apps/vpic-sim/data)
Prints the C++ rows of kNestedKeys (apps/vpic-sim/nested_keys.cc, pasted between its
clang-format off/on lines as printed) and exits non-zero when the evidence contradicts itself.

Evidence: the fixtures record two VINs in both shapes, for the same request:
  1FTMW1T88MFA00001  davidpeckham-vpic-api/decode-vin-unflattened.json  (DecodeVin, modelyear 2021)
                     davidpeckham-vpic-api/decode-vin-with-modelyear.json (DecodeVinValues, 2021)
  WA1A4AFY2J2008189  ShaggyTech-nhtsa-api-wrapper/decode-vin.response.json
                     ShaggyTech-nhtsa-api-wrapper/decode-vin-values.response.json
A nested row is {Value, ValueId, Variable, VariableId}. vPIC renames variables over time (the 2017
captures say "Wheel Base (inches)", later ones "Wheel Base (inches) From") but keeps VariableId,
so the table is keyed by VariableId. For each VariableId of the two nested captures:
  1. the candidates are the flat keys whose value equals the nested Value (null read as "") in
     BOTH pairs;
  2. "value": exactly one candidate and a non-empty recorded value: the values decide;
  3. "name": else the candidate whose name equals the variable's name once spaces, punctuation,
     a trailing "(unit)" and "From" are dropped, "To" becomes "_to" and a "(ABBR)" is tried alone;
  4. "hint": else the candidate named in HINTS below (vPIC's own abbreviations, e.g. "Curb Weight
     (pounds)" -> CurbWeightLB); the script checks that the hint is among the candidates.
Each flat key is used once. VariableIds that only the 2017 captures hold (barclay-nhtsa_vin:
16, 82, 157, 158) have no pair: they map by rule 3 against the newest flat key set ("name*").
The flat MakeID, ManufacturerId and ModelID hold the nested ValueId of Make (26), Manufacturer
Name (27) and Model (28): both pairs agree (checked below), so the table carries them too.
"""
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

DATA = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "data"
PAIRS = [
    ("davidpeckham-vpic-api/decode-vin-unflattened.json",
     "davidpeckham-vpic-api/decode-vin-with-modelyear.json"),
    ("ShaggyTech-nhtsa-api-wrapper/decode-vin.response.json",
     "ShaggyTech-nhtsa-api-wrapper/decode-vin-values.response.json"),
]
NEWEST = "cfjedimaster-raymondcamden2023/3VV3B7AXXNM077525.decodevinvalues.json"
OLD_ONLY = ["barclay-nhtsa_vin/success.json", "barclay-nhtsa_vin/not_found.json"]
VALUE_IDS = {26: "MakeID", 27: "ManufacturerId", 28: "ModelID"}
HINTS = {
    17: "EngineCycles", 48: "BatteryCells", 49: "BedLengthIN", 52: "BrakeSystemDesc",
    54: "CurbWeightLB", 56: "AirBagLocSeatCushion", 57: "BatteryA", 58: "BatteryV",
    59: "BatteryKWh", 61: "SeatRows", 65: "AirBagLocFront", 67: "FuelInjectionType",
    69: "AirBagLocKnee", 88: "BlindSpotMon", 104: "RearVisibilitySystem", 107: "AirBagLocSide",
    112: "WheelBaseLong", 115: "Wheels", 116: "TrailerType", 125: "EngineHP_to",
    132: "BatteryA_to", 133: "BatteryV_to", 134: "BatteryKWh_to", 137: "BatteryModules",
    138: "BatteryPacks", 148: "BusFloorConfigType", 169: "ActiveSafetySysNote",
    172: "AutoReverseSystem", 174: "CAN_AACN", 178: "LowerBeamHeadlampLightSource", 184: "GCWR",
    185: "GCWR_to", 190: "GVWR_to",
}


def body(rel):
    d = json.loads((DATA / rel).read_text())
    return d.get("content", d)


def squash(s):
    return re.sub(r"[^a-z0-9_]", "", s.lower())


def name_forms(variable):
    forms = set()
    base = variable
    abbr = re.search(r"\(([A-Z]{2,})\)", base)
    if abbr:
        forms.add(squash(abbr.group(1)))
    suffix = ""
    m = re.match(r"^(.*) (From|To)$", base)
    if m:
        base, suffix = m.group(1), ("_to" if m.group(2) == "To" else "")
    forms.add(squash(base) + suffix)
    forms.add(squash(re.sub(r"\s*\([^)]*\)\s*$", "", base)) + suffix)
    return forms


def spells(key, variables):
    return any(squash(key) == form for v in variables for form in name_forms(v))


def main():
    newest = list(body(NEWEST)["Results"][0].keys())
    names = defaultdict(list)
    values = defaultdict(dict)
    flats = []
    for i, (nested, flat) in enumerate(PAIRS):
        flats.append(body(flat)["Results"][0])
        for row in body(nested)["Results"]:
            vid = row["VariableId"]
            if row["Variable"] not in names[vid]:
                names[vid].append(row["Variable"])
            values[vid][i] = "" if row["Value"] is None else row["Value"]
            if vid in VALUE_IDS and flats[i][VALUE_IDS[vid]] != row["ValueId"]:
                sys.exit(f"ValueId of {vid} disagrees with {VALUE_IDS[vid]} in {flat}")
    for rel in OLD_ONLY:
        for row in body(rel)["Results"]:
            if row["Variable"] not in names[row["VariableId"]]:
                names[row["VariableId"]].append(row["Variable"])
    table = {}
    for vid in sorted(names):
        if vid not in values:  # only in the 2017 captures: by name alone
            hits = [k for k in newest if spells(k, names[vid])]
            if len(hits) == 1:
                table[vid] = (hits[0], "name*")
            continue
        cands = [k for k in newest
                 if all(k in flats[i] and flats[i][k] == v for i, v in values[vid].items())]
        by_name = [k for k in cands if spells(k, names[vid])]
        if len(cands) == 1 and any(values[vid].values()):
            table[vid] = (cands[0], "value")
        elif len(by_name) == 1:
            table[vid] = (by_name[0], "name")
        elif vid in HINTS and HINTS[vid] in cands:
            table[vid] = (HINTS[vid], "hint")
        else:
            sys.exit(f"VariableId {vid} {names[vid]}: undecided among {cands}")
    used = defaultdict(list)
    for vid, (key, _) in table.items():
        used[key].append(vid)
    dups = {k: v for k, v in used.items() if len(v) > 1}
    if dups:
        sys.exit(f"flat keys used twice: {dups}")
    unmapped = sorted(set(names) - set(table))
    for vid, (key, how) in sorted(table.items()):
        spelled = ", ".join(json.dumps(n) for n in names[vid])
        row = f'    {{{vid}, "{key}", "{how}"}},'
        if len(row) + 5 + len(spelled) <= 100:
            print(f"{row}  // {spelled}")
        else:  # too long for one line: the names above the row
            print(f"    // {spelled}\n{row}")
    unused = sorted(v for v in HINTS if table.get(v, ("", ""))[1] != "hint")
    if unused:
        sys.exit(f"hints not needed: {unused}")
    if unmapped:
        print("// unmapped:", {v: names[v] for v in unmapped})


main()
