"""Authoring and presenting tools: nothing in the course or in a rank imports this package.

* :mod:`.present`: ``make present`` (a landing page over Voila dashboards) and ``make site``;
* :mod:`.slides`: ``make slides`` (Voila's reveal.js template) and the slide metadata;
* :mod:`.bootstrap`: the Colab/Binder install cell every notebook starts with;
* :mod:`.release`: ``make student``, the notebooks without their solutions;
* :mod:`.i18n_build`, :mod:`.drift`: ``make translations`` and its drift check;
* :mod:`.fontsubset`, :mod:`.glossary`, :mod:`.scan`: the CJK font subset, the glossary
  table and the scan for untranslated strings the Chinese edition is built with.
"""
