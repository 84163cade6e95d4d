"""The devices a DBSCAN fit runs on: one process's (device_plans), an MPI
rank's (rank_plans) or a Dask worker's (worker_plans), as Plans of one
value type and the keywords that split the grid's rows over them."""
import copy

from ....parallel.manager import DeviceManager
from ....parallel.placement import bind_by_index, bind_devices
from ....parallel.shares import leave_aside_unlike
from ....passes.linkage import plan_for, plans_for
from ....runtime.devices import preferred, select_devices


def device_plans(devices):
    """(plans, split): the devices of a fit on *devices*, and the grid's
    keywords that split the rows over them (shares, executor).  Several
    where *devices* names them one by one: a DeviceManager's (by its
    weights, on its executor's threads) or a list's (by compute units);
    one, plan_for's, for any other value (a name, None, a device).  A
    device a DeviceManager gives no share holds no slab."""
    split = {}
    if isinstance(devices, DeviceManager):
        # "auto" over unlike devices (a GPU beside its host's CPU runtime):
        # nothing measures this pass, so only the devices alike the first
        # take rows, not the CPU by its compute units (a copy: the user's
        # manager keeps its state)
        devices = copy.deepcopy(devices)
        leave_aside_unlike(devices)
        profiles, shares = devices.profiles, devices.current_weights()
        split["executor"] = devices.executor
    elif isinstance(devices, (list, tuple)):
        # as the k-family's: profiles as given, names as DeviceManager reads them
        profiles = DeviceManager(devices).profiles
        shares = [p.compute_units for p in profiles]
    else:
        return [plan_for(devices)], split
    if len(profiles) == 1:
        return [plan_for(profiles)], split
    ranked = preferred(profiles)   # the first: the brute search's device, as plan_for's
    split["shares"] = [shares[profiles.index(p)] for p in ranked]
    return plans_for(ranked), split


def rank_plans(devices, comm):
    """This MPI rank's devices, as device_plans': a name (or None) picks
    one, the rank's share of a host's GPUs where it has several
    (placement's bind_devices, as the k-family's ranks)."""
    if devices is None or isinstance(devices, str):
        return [plan_for(bind_devices(select_devices(devices), comm))], {}
    return device_plans(devices)


def worker_plans(devices, local):
    """A Dask worker's devices, as rank_plans': a name (or None) picks one,
    the worker's share of a host's GPUs where it has several (*local*: its
    index among its host's workers and their number, bind_by_index)."""
    if devices is None or isinstance(devices, str):
        return [plan_for(bind_by_index(select_devices(devices), *local))], {}
    return device_plans(devices)
