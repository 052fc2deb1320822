"""Topics: the list, and a topic's page with its subscriptions and their push health; publish,
subscribe, unsubscribe through the operations every front end calls
(:mod:`gateway.operations.topics`, :mod:`~gateway.operations.subscriptions`,
:mod:`~gateway.operations.publishing`), with the form's values parsed by the API's own field
parsers (:mod:`gateway.api.console.forms`)."""

from __future__ import annotations

from flask import Response, render_template, request, url_for
from markupsafe import Markup

from gateway.api.console import forms
from gateway.api.console.circuit_pages import circuits, topics_with_open_circuits
from gateway.api.console.display import LIST_PAGE_SIZE
from gateway.api.console.web import blueprint, console, done, form_int, mns
from gateway.api.context import caller, operations
from gateway.operations import publishing, subscriptions, topics
from gateway.protocol.listing import PageQuery
from gateway.protocol.names import validate_name
from gateway.protocol.notify import ContentFormat, NotifyStrategy
from gateway.topics.records import subscription_resource

#: The control plane's resource type of a topic's tags.
TAGGED = "topic"


@blueprint.get("/topics")
def topic_list() -> str:
    prefix = request.args.get("prefix", "")
    marker = request.args.get("marker", "")
    size = form_int("size", LIST_PAGE_SIZE, 1, 1000)
    page = topics.list_topics(operations(), caller(), PageQuery(prefix, marker, size))
    names = [t.name for t in page.items]
    return render_template(
        "topics.html",
        page=page,
        counts=console().reads.subscription_counts(names),
        tags=mns().store.control.tags_by_name(TAGGED, names),
        open_circuits=topics_with_open_circuits(),
        prefix=prefix,
        marker=marker,
        size=size,
    )


@blueprint.get("/topics/<name>")
def topic_page(name: str) -> str:
    validate_name("topic", name)
    ops, who = operations(), caller()
    topic, _ = topics.get_topic(ops, who, name)
    marker = request.args.get("marker", "")
    query = PageQuery("", marker, form_int("size", 100, 1, 1000))
    page = subscriptions.list_subscriptions(ops, who, name, query)
    health = console().reads.health(name, [s.name for s in page.items])
    resources = {subscription_resource(name, s.name): s.name for s in page.items}
    limits = mns().store.control.rate_limits("subscription", list(resources))
    return render_template(
        "topic.html",
        topic=topic,
        page=page,
        health=health,
        circuits=circuits(name),
        rate_limits={resources[key]: policy for key, policy in limits.items()},
        tags=mns().store.control.tags(TAGGED, name),
        marker=marker,
        strategies=list(NotifyStrategy),
        content_formats=list(ContentFormat),
        back=url_for("console.topic_page", name=name),
        kept_history=mns().settings.history_retention,
    )


@blueprint.post("/topics/<name>/publish")
def topic_publish(name: str) -> Response:
    validate_name("topic", name)
    draft = forms.topic_message(name, request.form)
    message = publishing.publish(operations(), caller(), draft)
    deliveries = url_for("console.deliveries", message_id=message.id)
    # A link to the message's pushes: the flash is markup, its parts escaped.
    return done(Markup('Published message <a href="{}">{}</a>.').format(deliveries, message.id))


@blueprint.post("/topics/<name>/subscribe")
def topic_subscribe(name: str) -> Response:
    validate_name("topic", name)
    subscription = request.form.get("name", "").strip()
    validate_name("subscription", subscription)
    new = forms.subscription(name, subscription, request.form)
    created = subscriptions.subscribe(operations(), caller(), new)
    return done(f"Subscribed {subscription}." if created else f"{subscription} was already there.")


@blueprint.post("/topics/<name>/subscriptions/<subscription>/unsubscribe")
def topic_unsubscribe(name: str, subscription: str) -> Response:
    validate_name("topic", name)
    validate_name("subscription", subscription)
    subscriptions.unsubscribe(operations(), caller(), name, subscription)
    return done(f"Unsubscribed {subscription}.")
