"""Repair what a diagnosis found, where that loses nothing a person wrote.

A damaged store is moved aside (kept, renamed) and started empty; a lost store is started
empty; then every room whose checkpoint no longer matches its log is rebuilt from the log.
Logs and MEMORY.md files are never touched.

On a database a room is rebuilt as any run writes it: under the room's lease, taken by the
doctor (owner ``doctor:<host>:<pid>:<random>``, shown by ``staffroom doctor`` meanwhile) and
given back when the room is done, so the fenced checkpointer accepts the rebuilt checkpoint at
the doctor's epoch and a replica that ran the room before is fenced off. A room a live
replica holds is left alone, naming that replica: the doctor never waits for one, nor takes a
room from under it.
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

from framework.data_folder import CHECKPOINTS, DataFolder
from framework.database.pool import replica_id
from framework.doctor.checks import Diagnosis, Finding, diagnose
from framework.errors import RoomBusyError, StaffroomError, UnknownNameError
from framework.runtime.room import Room
from framework.sessions.keys import Channel, SessionKey
from framework.settings import Settings
from framework.specs.model_spec import ModelSpec
from framework.staffroom import Staffroom


async def repair(settings: Settings, found: Diagnosis) -> list[str]:
    """Do what ``--repair`` may for each finding; one line per action taken or refused."""
    done: list[str] = []
    folder = DataFolder(settings.data_dir)
    stores = [f for f in found.findings if f.repair in ("move_aside", "start_empty")]
    for finding in stores:
        done.append(_restart_store(folder, finding))
    if any(Path(f.where).name == CHECKPOINTS for f in stores):
        found = await diagnose(settings)  # with no checkpoints, every room needs a rebuild
    rooms = [f for f in found.findings if f.repair == "rebuild"]
    if rooms:
        done += await _rebuild_rooms(settings, rooms)
    return done


def _restart_store(folder: DataFolder, finding: Finding) -> str:
    path = Path(finding.where)
    moved = folder.set_aside(path.name)
    kept = f" (kept as {', '.join(moved)})" if moved else ""
    return f"{path}: moved aside{kept}; it starts empty on the next open"


DOCTOR = "doctor:"
"""How the doctor's lease-owner name starts (a replica's is ``<host>:<pid>:<random>``)."""


async def _rebuild_rooms(settings: Settings, rooms: list[Finding]) -> list[str]:
    # A rebuild calls no model: the simulator stands in so no key or server is needed.
    update: dict[str, object] = {"model_override": ModelSpec(provider="simulated")}
    if settings.database is not None:
        update["run_lock_timeout"] = 0.0  # a room under a live lease is refused, not awaited
    settings = settings.model_copy(update=update)
    done = []
    async with await Staffroom.open(settings=settings, owner=DOCTOR + replica_id()) as staff:
        for finding in rooms:
            try:
                room = await _open_room(staff, finding)
                report = await room.rebuild()
            except RoomBusyError as exc:
                done.append(f"{finding.where}: not rebuilt: {await _held(staff, finding, exc)}")
                continue
            except StaffroomError as exc:
                done.append(f"{finding.where}: not rebuilt: {exc}")
                continue
            where = {
                "human": f"waiting for people again, at {report.from_event}",
                "route": f"from its entry {report.from_event}; its run goes on at the next start",
                "end": f"idle after its outcome {report.from_event}",
                "reset": "reset: its log holds no entry, so it enters afresh",
            }[report.resumed_at]
            line = f"{finding.where}: rebuilt from its log, {where}"
            if report.unrouted:
                line += f"; {len(report.unrouted)} message(s) after that pause were never answered"
                line += ": post them again"
            done.append(line)
    return done


async def _held(staff: Staffroom, finding: Finding, busy: RoomBusyError) -> RoomBusyError:
    """Why a room's lease could not be taken: the replica that holds it, and the way out."""
    leases = await staff.stores.leases()
    key = finding.session or finding.where
    holder = await leases.holder(key) if leases is not None else None
    if holder is None:  # a file lock (no database), or the lease ended meanwhile
        return busy
    ends = holder.expires_at.astimezone(UTC)
    return RoomBusyError(
        f"replica {holder.owner} holds the room's lease (epoch {holder.epoch}), so nothing "
        "was written. Stop that replica, or wait until it is done with the room (its lease "
        f"ends at {ends:%Y-%m-%d %H:%M:%S} UTC unless it renews it), then run staffroom "
        "doctor --repair again"
    )


async def _open_room(staff: Staffroom, finding: Finding) -> Room:
    key = SessionKey.parse(finding.session or finding.where)
    try:
        return await staff.session(str(key), scenario_file=True)  # the scenario its entry names
    except UnknownNameError:
        if key.channel == Channel.DM or not finding.scenario:
            raise
    # A log that lost its entry: the id its checkpoint names, from the catalog (never a file).
    return await staff.room(key.chat_id, staff.catalog.scenario_by_id(finding.scenario))
