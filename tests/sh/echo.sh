# echo: -n and escapes
echo plain words
echo -n 'no newline; '; echo next
echo 'tab\there'
