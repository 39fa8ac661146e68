"""The xDSL plugin: taihu's universe loads next to xDSL's own without name clashes."""

from xdsl.universe import Universe

from taihu.tools.universe import TAIHU_UNIVERSE, get_all_dialects, get_all_passes


def test_multiverse_has_no_clashes_and_contains_taihu() -> None:
    # get_multiverse raises ValueError on a duplicate dialect, pass or target name.
    multiverse = Universe.get_multiverse()
    for name in get_all_dialects():
        assert name in multiverse.all_dialects, name
    for name in get_all_passes():
        assert name in multiverse.all_passes, name


def test_every_registered_factory_loads() -> None:
    for name, factory in TAIHU_UNIVERSE.all_dialects.items():
        assert factory().name == name
    for name, factory in TAIHU_UNIVERSE.all_passes.items():
        assert factory().name == name
