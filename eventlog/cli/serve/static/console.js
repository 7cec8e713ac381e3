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
  // A proof link for the event the detail panel shows.
  var proofs = body.getAttribute('data-proofs');
  var dataNode = document.getElementById('event-data');
  if (proofs && dataNode) {
    var data = JSON.parse(dataNode.textContent);
    document.addEventListener('click', function (e) {
      var el = e.target.closest && e.target.closest('[data-pos]');
      var where = document.getElementById('detail-proof');
      if (!el || !where) { return; }
      var full = data[el.getAttribute('data-pos')];
      where.textContent = '';
      if (full && full.event_id) {
        var a = document.createElement('a');
        a.href = proofs + encodeURIComponent(full.event_id) + '/proof';
        a.textContent = 'download the inclusion proof of this event';
        a.setAttribute('download', 'proof-' + full.event_id + '.json');
        a.className = 'proof-link';
        where.appendChild(a);
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
