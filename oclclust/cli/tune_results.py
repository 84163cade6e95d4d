"""The tuner's results: the winner of a table of times, and a device's
devices.yaml entry.

A device's entry is one block of the file: a marker line naming the device
and driver, comment lines of the figures, then the entry.  Its terms and
figures come in parts, one a tuned kernel (Lloyd's variant and tiles, the
ensemble's EnsembleTerms); a later tune of some kernels replaces their parts
of the block and keeps the others', so a device's Lloyd and ensemble tunes,
run apart, end in one entry.
"""
import dataclasses
import os
from pathlib import Path

import numpy as np
import yaml

KERNELS = ("lloyd", "ensemble")   # the parts of an entry, in the order written


def relative_score(times):
    """Each row's geometric mean over the columns (shapes) of its time
    relative to the column's least; *times* rows x shapes, all finite."""
    return np.exp(np.log(times / times.min(axis=0)).mean(axis=1))


def ensemble_keys():
    """The devices.yaml keys of EnsembleTerms, in their declared order."""
    from ..passes.ensemble import EnsembleTerms
    return [f.metadata["profile_key"] for f in dataclasses.fields(EnsembleTerms)]


def kernel_of(key=None, note=None):
    """The part a term's *key* or a figures' *note* line belongs to: the
    ensemble's keys and the notes that start "ensemble" are the ensemble's,
    the rest Lloyd's (the tuner writes nothing else)."""
    if key is not None:
        return "ensemble" if key in ensemble_keys() else "lloyd"
    return "ensemble" if note.startswith("ensemble") else "lloyd"


def marker_of(profile):
    return (f"# tuned by oclclust.tune: {profile.name} | {profile.platform} | "
            f"{profile.driver_version}")


def entry_for(profile, parts):
    """(marker, YAML text) of the devices.yaml entry for *profile*.

    Parameters
    ----------
    profile : DeviceProfile
        The tuned device: the entry matches its name, platform and driver.
    parts : dict
        ``{kernel: (terms, notes)}``: each tuned kernel's winning terms (a
        mapping of devices.yaml keys) and its figures (comment lines,
        without the ``#``).

    Returns
    -------
    marker, text : str
        The block's first line, and the whole block.
    """
    order = [kernel for kernel in KERNELS if kernel in parts]
    terms = {k: v for kernel in order for k, v in parts[kernel][0].items()}
    notes = [note for kernel in order for note in parts[kernel][1]]
    entry = {"match": {"name": profile.name, "platform": profile.platform,
                       "driver": profile.driver_version}, **terms}
    marker = marker_of(profile)
    head = "\n".join([marker] + [f"# {note}".rstrip() for note in notes])
    return marker, f"{head}\n" + yaml.safe_dump([entry], sort_keys=False, width=100)


def parts_of(block):
    """``{kernel: (terms, notes)}`` of a block the tuner wrote; a block
    edited past one entry gives nothing to keep (the tune replaces it)."""
    lines = block.strip("\n").split("\n")[1:]
    notes = []
    while lines and lines[0].startswith("#"):
        notes.append(lines.pop(0)[1:].strip())
    entries = yaml.safe_load("\n".join(lines))
    if not (isinstance(entries, list) and len(entries) == 1 and isinstance(entries[0], dict)):
        return {}
    parts = {kernel: ({}, []) for kernel in KERNELS}
    for key, value in entries[0].items():
        if key != "match":
            parts[kernel_of(key=key)][0][key] = value
    for note in notes:
        parts[kernel_of(note=note)][1].append(note)
    return {kernel: part for kernel, part in parts.items() if part != ({}, [])}


def default_path():
    """$OCLCLUST_DEVICES_YAML, else the user's devices.yaml (both read by default)."""
    from ..runtime.profiles import user_profiles_path
    return Path(os.environ.get("OCLCLUST_DEVICES_YAML") or user_profiles_path())


def write_entries(path, entries):
    """Write the tuned *entries* to the devices.yaml at *path*.

    Each goes to the end of the file, replacing the block (marker line to
    blank line) an earlier tune of the same device wrote, with that block's
    parts of kernels not tuned now kept; the rest of the file, comments
    included, is kept.  The file is loaded back before it replaces the old
    one, so a malformed entry never replaces a good file.

    Parameters
    ----------
    path : str or Path
        The devices.yaml to write (made with its folders if missing).
    entries : list of (DeviceProfile, dict)
        Each tuned device and its ``{kernel: (terms, notes)}`` parts.

    Returns
    -------
    path : Path
        The file written.
    """
    from ..runtime.profiles import load_profile_file
    path = Path(path)
    blocks = (path.read_text() if path.exists() else "").rstrip("\n").split("\n\n")
    earlier = {b.lstrip("\n").split("\n")[0]: b for b in blocks if b.strip()}
    texts = [entry_for(profile, {**parts_of(earlier.get(marker_of(profile), "#")), **parts})[1]
             for profile, parts in entries]
    markers = {marker_of(profile) for profile, _ in entries}
    kept = [b for b in blocks if b.strip() and b.lstrip("\n").split("\n")[0] not in markers]
    text = "\n\n".join(kept + [t.rstrip("\n") for t in texts]) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    try:
        load_profile_file(tmp)
    except Exception:
        tmp.unlink()
        raise
    tmp.replace(path)
    return path
