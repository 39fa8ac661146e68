"""taihu.target: the machine a program is compiled for and runs on (the bottom layer).

The machine description (:class:`Machine`, TOML loading and validation, the shipped
descriptions in ``target/configs/``) and the pure hardware rules every level shares (the athread
DMA descriptor rule and 128-B transaction arithmetic in :mod:`taihu.target.dma`). Dialects,
passes, the analytic model and the simulator import this package; it imports none of them.
"""

from taihu.target.machine import (
    DEFAULT_MACHINE_NAME,
    DEFAULT_MACHINE_PATH,
    InstrTiming,
    Machine,
    MachineConfigError,
    default_machine,
    load_machine,
    machine_from_mapping,
    resolve_machine,
    shipped_machines,
)

__all__ = [
    "DEFAULT_MACHINE_NAME",
    "DEFAULT_MACHINE_PATH",
    "InstrTiming",
    "Machine",
    "MachineConfigError",
    "default_machine",
    "load_machine",
    "machine_from_mapping",
    "resolve_machine",
    "shipped_machines",
]
