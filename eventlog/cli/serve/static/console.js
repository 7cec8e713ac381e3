// The console's only script (served from the package: the Content-Security-Policy allows
// no other). It never builds markup from stored strings: text goes in through textContent.
(function () {
  'use strict';
  var body = document.body;
  // The report's tree indents by an inline style (--d), which the policy blocks: set it
  // through the style object instead.
  document.querySelectorAll('li[style]').forEach(function (li) {
    var m = /--d:\s*(\d+)/.exec(li.getAttribute('style') || '');
    if (m) { li.style.setProperty('--d', m[1]); }
  });
  // Under the detail panel of an event: its inclusion proof (when the console has the
  // tenant's signed head) and, for a thread checkpoint, its own view.
  var proofs = body.getAttribute('data-proofs');
  var dataNode = document.getElementById('event-data');
  if (dataNode) {
    var events = JSON.parse(dataNode.textContent);
    var link = function (where, href, text, name) {
      var a = document.createElement('a');
      a.href = href;
      a.textContent = text;
      a.className = name;
      if (where.firstChild) { where.appendChild(document.createTextNode(' · ')); }
      where.appendChild(a);
      return a;
    };
    document.addEventListener('click', function (e) {
      var el = e.target.closest && e.target.closest('[data-pos]');
      var where = document.getElementById('detail-proof');
      if (!el || !where) { return; }
      var full = events[el.getAttribute('data-pos')];
      where.textContent = '';
      if (!full) { return; }
      if (proofs && typeof full.event_id === 'string') {
        var a = link(where, proofs + encodeURIComponent(full.event_id) + '/proof',
                     'download the inclusion proof of this event', 'proof-link');
        a.setAttribute('download', 'proof-' + full.event_id + '.json');
      }
      var id = full.data && full.data.checkpoint_id;
      if (full.type === 'thread_checkpoint_put' && typeof id === 'string') {
        link(where, '?checkpoint=' + encodeURIComponent(id) + '#checkpoint',
             'open this checkpoint', 'checkpoint-link');
      }
    });
  }
  // Follow: reload when the thread records more.
  var live = body.getAttribute('data-live');
  if (live && window.EventSource) {
    var source = new EventSource(live);
    source.addEventListener('appended', function () {
      source.close();
      window.location.reload();
    });
  }
})();
