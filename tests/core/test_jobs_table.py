"""One registration per job: the protocol's table of service jobs (run/protocol.py, what the window may ask) and the
kernel's handlers (kernel/job_handlers.py, each registered where it is written) are the same jobs, with the same
types."""

from __future__ import annotations

import inspect
import typing

import pytest

from workbench.core.kernel import job_handlers
from workbench.core.run.protocol import SERVICE_OF_REQUEST, SERVICES, Cancel, Profile, read_control


def test_every_service_has_its_handler_and_every_handler_its_service():
    assert set(job_handlers.HANDLERS) == set(SERVICE_OF_REQUEST)
    assert len(SERVICES) == len(SERVICE_OF_REQUEST)  # one service per request type


@pytest.mark.parametrize("service", SERVICES, ids=lambda service: service.job)
def test_a_handler_answers_its_services_type_reports_its_progress_and_stops_when_cancellable(service):
    handler = job_handlers.HANDLERS[service.request]
    hints = typing.get_type_hints(handler)
    assert hints["return"] is service.answer
    parameters = inspect.signature(handler).parameters
    assert ("progress" in parameters) == (service.progress is not None)
    if service.progress is not None:
        assert typing.get_args(hints["progress"])[0] == [service.progress]
    assert ("stop" in parameters) == service.cancellable


def test_a_second_handler_for_one_request_is_refused():
    with pytest.raises(TypeError, match="Explain has two handlers"):
        job_handlers.handles(job_handlers.explain)


@pytest.mark.parametrize("message, control", [
    ({"cancel": 3}, Cancel(3)), ({"profile": 20}, Profile(20)), ({"profile": 0}, None), ({"profile": "20"}, None),
    ({"cancel": "3"}, None), ({"job": "explain"}, None), ("profile", None), ({"profile": 5, "extra": 1}, None)])
def test_control_messages_are_read_as_typed_records(message, control):
    assert read_control(message) == control
